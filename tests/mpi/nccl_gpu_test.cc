// SPDX-License-Identifier: MIT
//
// The NCCL backend under mpirun (ctest labels `mpi` and `gpu`). Skips (shown
// as skipped by ctest's SKIP_REGULAR_EXPRESSION) where there is no CUDA
// device for every rank. The CPU libtorch here has no CUDA allocator, so
// device buffers are cudaMalloc'd and wrapped with from_blob: the backend
// binds them as it binds libtorch's CUDA tensors, and values are checked
// after copying back, against closed forms of the rank numbers.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include "replayer/comm/mpi_comm.h"
#include "tests/mpi/mpi_test_util.h"

namespace etb::test {
namespace {
using trace::CommType;

// A float device tensor holding `host`'s values (freed with the tensor).
at::Tensor onDevice(const at::Tensor& host) {
  const at::Tensor h = host.contiguous().to(at::kFloat);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, static_cast<size_t>(h.nbytes())), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, h.data_ptr(), static_cast<size_t>(h.nbytes()), cudaMemcpyHostToDevice),
            cudaSuccess);
  int dev = 0;
  cudaGetDevice(&dev);
  // target_device: the CPU build cannot ask CUDA which device owns `p`.
  const at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(dev));
  return at::for_blob(p, h.sizes())
      .deleter([](void* q) { cudaFree(q); })
      .options(at::TensorOptions().dtype(at::kFloat).device(device))
      .target_device(device)
      .make_tensor();
}

at::Tensor toHost(const at::Tensor& dev) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  at::Tensor h = at::empty(dev.sizes(), at::kFloat);
  EXPECT_EQ(cudaMemcpy(h.data_ptr(), dev.data_ptr(), static_cast<size_t>(h.nbytes()),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  return h;
}

at::Tensor iota(int64_t count, double base) {
  return at::arange(count, at::kDouble).add_(base).to(at::kFloat);
}

bool enoughDevices(int world) {
  int devices = 0;
  // NCCL refuses two ranks on one device.
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices >= world;
}

TEST(NcclBackend, CollectiveValuesOnTheDevice) {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (!enoughDevices(world)) GTEST_SKIP() << "needs one CUDA device per rank (" << world << ")";
  replay::CommOptions opts;
  opts.device = "cuda";
  // One rank (one GPU): makeCommunicator would pick the local backend, so
  // build NCCL over MPI directly; every call still goes through NCCL.
  auto comm = world > 1 ? replay::makeCommunicator(opts)
                        : replay::comm::makeNcclCommunicator(replay::comm::makeMpiCommunicator(opts),
                                                             opts);
  ASSERT_EQ(comm->backendName(), "nccl");
  const int n = comm->worldSize(), rank = comm->rank();
  const uint64_t un = static_cast<uint64_t>(n);
  CommTraceBuilder b;
  const auto sum = b.add(commInfo(CommType::kAllReduce, 1000, 1000));
  trace::CommInfo mn = commInfo(CommType::kAllReduce, 1000, 1000);
  mn.reduce_op = trace::ReduceOp::kMin;
  mn.is_async = true;
  const auto min = b.add(mn);
  const auto ag = b.add(commInfo(CommType::kAllGather, 10, 10 * un));
  const auto rs = b.add(commInfo(CommType::kReduceScatter, 10 * un, 10));
  trace::CommInfo bc = commInfo(CommType::kBroadcast, 77, 77);
  bc.root = n - 1;
  const auto bcast = b.add(bc);
  comm->prepare(b.trace());

  at::Tensor t = onDevice(iota(1000, rank * 1000.0));
  runNode(*comm, b.trace(), sum, {t}, {t});
  const double rank_sum = n * (n - 1) / 2.0 * 1000.0;
  EXPECT_TRUE(at::equal(toHost(t), at::arange(1000, at::kDouble).mul_(n).add_(rank_sum).to(at::kFloat)));
  at::Tensor m = onDevice(at::full({1000}, 5.0 + rank));
  runNode(*comm, b.trace(), min, {m}, {m});
  EXPECT_TRUE(at::equal(toHost(m), at::full({1000}, 5.0f))) << "min";
  at::Tensor gathered = onDevice(at::zeros({10 * n}));
  runNode(*comm, b.trace(), ag, {onDevice(iota(10, rank * 100.0))}, {gathered});
  const at::Tensor g = toHost(gathered);
  for (int r = 0; r < n; ++r) EXPECT_TRUE(at::equal(g.slice(0, r * 10, (r + 1) * 10), iota(10, r * 100.0)));
  at::Tensor chunk = onDevice(at::zeros({10}));
  runNode(*comm, b.trace(), rs, {onDevice(iota(10 * n, rank))}, {chunk});
  EXPECT_TRUE(at::equal(toHost(chunk), at::arange(10, at::kDouble).add_(rank * 10).mul_(n)
                                           .add_(n * (n - 1) / 2.0).to(at::kFloat)));
  at::Tensor bt = onDevice(iota(77, rank * 1000.0));
  runNode(*comm, b.trace(), bcast, {bt}, {bt});
  EXPECT_TRUE(at::equal(toHost(bt), iota(77, (n - 1) * 1000.0))) << "broadcast";
  EXPECT_EQ(comm->stats().calls, 5u);
}

}  // namespace
}  // namespace etb::test
