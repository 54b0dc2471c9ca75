// SPDX-License-Identifier: MIT
//
// Replays all_reduce calls in a loop and fails on purpose, for the failure
// tests (run under mpirun -np 2):
//   stall  rank 1 sleeps before a call; --comm-timeout 2 on rank 0 fires
//   throw  rank 1 hits an error and calls abortJob, as et_replay's main does
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "core/base/error.h"
#include "tests/mpi/mpi_test_util.h"

int main(int argc, char** argv) {
  using namespace etb;
  const std::string mode = argc > 1 ? argv[1] : "throw";
  replay::CommOptions opts;
  if (mode == "stall") opts.timeout_s = 2;
  std::unique_ptr<replay::Communicator> comm = replay::makeCommunicator(opts);
  test::CommTraceBuilder b("chaos.et.json");
  const auto id = b.add(test::commInfo(trace::CommType::kAllReduce, 1 << 18, 1 << 18));
  comm->prepare(b.trace());
  at::Tensor t = at::ones({1 << 18});
  for (long i = 0;; ++i) {
    if (comm->rank() == 1 && i == 20) {
      if (mode == "stall") sleep(300);  // far past the bound: only the watchdog ends it in time
    }
    try {
      if (comm->rank() == 1 && i == 20 && mode == "throw") {
        ETB_RUNTIME_ERROR("injected failure");
      }
      test::runNode(*comm, b.trace(), id, {t}, {t});
    } catch (const std::exception& e) {
      comm->abortJob(std::string("failed at node ") + std::to_string(id) + " \"record_param_comms\": " +
                         e.what(),
                     1);
    }
  }
}
