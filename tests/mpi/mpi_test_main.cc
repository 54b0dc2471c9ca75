// SPDX-License-Identifier: MIT
//
// gtest under mpirun: every rank runs every test; only rank 0 prints. A
// failure on any rank fails the job (gtest's exit code per rank).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {
// Other ranks print only their failures, prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.summary());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int rc = RUN_ALL_TESTS();
  // Failures on other ranks are silent there: make rank 0's exit say so.
  int any = 0;
  MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any != 0 && rc == 0) std::fprintf(stderr, "a test failed on another rank\n");
  MPI_Finalize();
  return any;
}
