// SPDX-License-Identifier: MIT
//
// Process groups as sub-communicators, and the pre-flight that stops
// mismatched collective sequences before they deadlock.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "tests/mpi/mpi_test_util.h"

namespace etb::test {
namespace {
using trace::CommType;

// 4 ranks in two groups of 2 ({0,2} and {1,3}): each group sums only its
// members, and a broadcast rooted at a recorded global rank maps to the
// right group-local root.
TEST(Groups, CollectivesStayInsideTheirGroup) {
  replay::Communicator& comm = testComm();
  if (comm.worldSize() != 4) GTEST_SKIP() << "needs 4 ranks";
  const int rank = comm.rank();
  CommTraceBuilder b;
  b.addGroup("0", {0, 1, 2, 3});
  const int32_t even = b.addGroup("1", {0, 2});
  const int32_t odd = b.addGroup("2", {1, 3});
  const int32_t mine = rank % 2 == 0 ? even : odd;
  const auto ar = b.add(commInfo(CommType::kAllReduce, 100, 100, trace::DType::kFloat, mine));
  trace::CommInfo bc = commInfo(CommType::kBroadcast, 100, 100, trace::DType::kFloat, mine);
  bc.root = rank % 2 == 0 ? 2 : 3;  // global rank, second member of each group
  const auto bid = b.add(bc);
  const auto world_ar = b.add(commInfo(CommType::kAllReduce, 4, 4, trace::DType::kFloat, 0));
  comm.prepare(b.trace());

  at::Tensor t = at::full({100}, static_cast<float>(rank + 1));
  runNode(comm, b.trace(), ar, {t}, {t});
  const float want = rank % 2 == 0 ? 1 + 3 : 2 + 4;
  EXPECT_TRUE(at::equal(t, at::full({100}, want)));

  at::Tensor v = at::full({100}, static_cast<float>(rank * 10));
  runNode(comm, b.trace(), bid, {v}, {v});
  EXPECT_TRUE(at::equal(v, at::full({100}, static_cast<float>(bc.root * 10))));

  at::Tensor w = at::ones({4});
  runNode(comm, b.trace(), world_ar, {w}, {w});
  EXPECT_TRUE(at::equal(w, at::full({4}, 4.0f)));
}

TEST(Groups, RankOutsideTheWorldIsAnInputError) {
  replay::Communicator& comm = testComm();
  CommTraceBuilder b;
  b.addGroup("1", {0, static_cast<int64_t>(comm.worldSize())});
  EXPECT_THROW(comm.prepare(b.trace()), InputError);
  comm.barrier();
}

TEST(Preflight, IdenticalSequencesPass) {
  replay::Communicator& comm = testComm();
  CommTraceBuilder b;
  b.add(commInfo(CommType::kAllReduce, 10, 10));
  b.add(commInfo(CommType::kAllGather, 10, 10 * static_cast<uint64_t>(comm.worldSize())));
  EXPECT_NO_THROW(comm.prepare(b.trace()));
}

// The last rank's trace resizes collective #2: every rank must stop with the
// same InputError naming group, index, rank and node, instead of hanging.
TEST(Preflight, FirstMismatchIsReportedOnEveryRank) {
  replay::Communicator& comm = testComm();
  const int last = comm.worldSize() - 1;
  CommTraceBuilder b("rank.et.json");
  b.add(commInfo(CommType::kAllReduce, 10, 10));
  b.add(commInfo(CommType::kBarrier, 0, 0));
  const uint64_t size = comm.rank() == last ? 20 : 10;
  const auto bad = b.add(commInfo(CommType::kAllReduce, size, size));
  b.add(commInfo(CommType::kBroadcast, 10, 10));
  try {
    comm.prepare(b.trace());
    ADD_FAILURE() << "pre-flight accepted mismatched sequences";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("process group \"world\" collective #2"), std::string::npos) << what;
    EXPECT_NE(what.find("rank " + std::to_string(last) + " has node " + std::to_string(bad) +
                        " all_reduce of 20 x float32"),
              std::string::npos)
        << what;
    EXPECT_EQ(e.loc().node_id, bad);
  }
}

TEST(Preflight, MissingCollectiveOnOneRank) {
  replay::Communicator& comm = testComm();
  CommTraceBuilder b;
  b.add(commInfo(CommType::kAllReduce, 10, 10));
  if (comm.rank() != 0) b.add(commInfo(CommType::kAllReduce, 10, 10));
  try {
    comm.prepare(b.trace());
    ADD_FAILURE() << "pre-flight accepted a missing collective";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("collective #1 differs: rank 0 has no collective"),
              std::string::npos)
        << e.what();
  }
}

// A torch 1.13 gloo trace with a sub-group: its c10d ops do not say which
// group they ran on (pg -1), so rank 0's sub-group call parts the world
// sequences; the error must say why, not only that they differ.
TEST(Preflight, UnrecordedGroupWithSubGroupsSaysWhy) {
  replay::Communicator& comm = testComm();
  CommTraceBuilder b;
  std::vector<int64_t> all(static_cast<size_t>(comm.worldSize()));
  for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int64_t>(r);
  b.addGroup("0", all);
  b.addGroup("1", {0});
  if (comm.rank() == 0) b.add(commInfo(CommType::kAllReduce, 6, 6, trace::DType::kFloat, -1));
  b.add(commInfo(CommType::kBarrier, 0, 0, trace::DType::kFloat, -1));
  try {
    comm.prepare(b.trace());
    ADD_FAILURE() << "pre-flight accepted a sub-group call taken as the world's";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("does not record which process group"), std::string::npos)
        << e.what();
  }
}

TEST(Preflight, BadTraceOnOneRankStopsEveryRank) {
  replay::Communicator& comm = testComm();
  CommTraceBuilder b;
  trace::CommInfo info = commInfo(CommType::kAllToAllV, 6, 6);
  // A split list of the wrong length is an error on the last rank only.
  if (comm.rank() == comm.worldSize() - 1) info.in_splits = {1, 2, 3, 4, 5};
  else info.in_splits = info.out_splits = std::vector<int64_t>(static_cast<size_t>(comm.worldSize()), 1);
  b.add(info);
  EXPECT_THROW(comm.prepare(b.trace()), InputError);
}

}  // namespace
}  // namespace etb::test
