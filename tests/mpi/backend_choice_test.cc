// SPDX-License-Identifier: MIT
//
// Which backend et_replay picks: --comm when given (refused with an
// InputError when this build lacks it), else the backend the trace's
// process groups recorded when built in, else MPI.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "etb/config.h"
#include "tests/mpi/mpi_test_util.h"

namespace etb::test {
namespace {

trace::Trace traceWithBackend(const std::string& backend) {
  CommTraceBuilder b;
  b.addGroup("0", {0, 1});
  b.trace().process_groups[0].backend = backend;
  return b.trace();
}

TEST(BackendChoice, FollowsTheRecordedProcessGroups) {
  replay::CommOptions cpu;
  EXPECT_EQ(replay::pickCommBackend(traceWithBackend("cpu:gloo"), cpu), ETB_WITH_GLOO ? "gloo" : "mpi");
  EXPECT_EQ(replay::pickCommBackend(traceWithBackend("gloo"), cpu), ETB_WITH_GLOO ? "gloo" : "mpi");
  // a NCCL recording replayed on CPU has no NCCL to use
  EXPECT_EQ(replay::pickCommBackend(traceWithBackend("nccl"), cpu), "mpi");
  EXPECT_EQ(replay::pickCommBackend(traceWithBackend(""), cpu), "mpi");
  replay::CommOptions cuda;
  cuda.device = "cuda";
  EXPECT_EQ(replay::pickCommBackend(traceWithBackend("cpu:gloo,cuda:nccl"), cuda),
            ETB_WITH_NCCL ? "nccl" : ETB_WITH_GLOO ? "gloo" : "mpi");
}

TEST(BackendChoice, ExplicitBackendWinsAndMissingOnesAreRefused) {
  replay::CommOptions o;
  o.backend = "mpi";
  EXPECT_EQ(replay::pickCommBackend(traceWithBackend("cpu:gloo"), o), "mpi");
  EXPECT_NO_THROW(replay::checkCommBackend(o));
  o.backend = "gloo";
  if (ETB_WITH_GLOO) {
    EXPECT_NO_THROW(replay::checkCommBackend(o));
  } else {
    EXPECT_THROW(replay::checkCommBackend(o), InputError);
  }
  o.backend = "nccl";  // on --device cpu: refused whether built or not
  EXPECT_THROW(replay::checkCommBackend(o), InputError);
  o.backend = "ucc";
  EXPECT_THROW(replay::checkCommBackend(o), InputError);
}

}  // namespace
}  // namespace etb::test
