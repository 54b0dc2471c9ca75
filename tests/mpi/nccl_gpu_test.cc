// SPDX-License-Identifier: MIT
//
// The NCCL backend under mpirun (ctest labels `mpi` and `gpu`); skips where
// there is no CUDA device. Buffers are the backend's device scratch, since
// the CPU libtorch here cannot wrap device memory in tensors.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "tests/mpi/mpi_test_util.h"

namespace etb::test {
namespace {
using trace::CommType;

TEST(NcclBackend, CollectivesRunOnTheDevice) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no CUDA device";
  }
  replay::CommOptions opts;
  opts.device = "cuda";
  auto comm = replay::makeCommunicator(opts);
  ASSERT_EQ(comm->backendName(), "nccl");
  const uint64_t n = static_cast<uint64_t>(comm->worldSize());
  CommTraceBuilder b;
  std::vector<trace::NodeId> ids;
  for (CommType t : {CommType::kAllReduce, CommType::kAllGather, CommType::kReduceScatter,
                     CommType::kAllToAll, CommType::kBroadcast, CommType::kBarrier}) {
    trace::CommInfo info = commInfo(t, 1024 * n, 1024 * n);
    if (t == CommType::kAllGather) info.in_elems = 1024;
    if (t == CommType::kReduceScatter) info.out_elems = 1024;
    info.is_async = t == CommType::kAllReduce;
    ids.push_back(b.add(info));
  }
  comm->prepare(b.trace());
  for (auto id : ids) runNode(*comm, b.trace(), id, {}, {});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(comm->stats().calls, ids.size());
}

}  // namespace
}  // namespace etb::test
