// SPDX-License-Identifier: MIT
//
// The CUDA device timer (replayer/timer.h) and the replay's device time per
// op, on a real device: skipped (GTEST_SKIP) where there is none. The timer
// tests use the CUDA runtime alone (memsets of known sizes); the replay test
// needs a CUDA libtorch.
#include <ATen/Context.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "replayer/replayer.h"
#include "replayer/timer.h"
#include "tests/replayer/replay_helpers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {

bool haveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define ETB_REQUIRE_CUDA_DEVICE() \
  if (!haveDevice()) GTEST_SKIP() << "no CUDA device"

// A device buffer freed at scope end.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&ptr, n), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(ptr); }
  void* ptr = nullptr;
  size_t bytes;
};

// One "op" per step: a memset of `bytes[i]` on the default stream.
StepDeviceTimes timeMemsets(DeviceSync& sync, void* buf, const std::vector<size_t>& bytes) {
  sync.beginTiming(bytes.size() + 1);  // the last step makes no call
  for (size_t i = 0; i < bytes.size(); ++i) {
    sync.beforeCall(i);
    EXPECT_EQ(cudaMemsetAsync(buf, static_cast<int>(i), bytes[i], nullptr), cudaSuccess);
    sync.afterCall(i);
  }
  sync.synchronize();
  return sync.endTiming();
}

TEST(CudaDeviceTimer, TimesMemsetsInOrderOfSize) {
  ETB_REQUIRE_CUDA_DEVICE();
  const auto sync = makeDeviceSync("cuda:0");
  ASSERT_TRUE(sync->timesDevice());
  constexpr size_t kMiB = 1 << 20;
  DeviceBuffer buf(512 * kMiB);
  const std::vector<size_t> sizes{8 * kMiB, 64 * kMiB, 512 * kMiB};
  timeMemsets(*sync, buf.ptr, sizes);  // warm-up: first launches cost more
  const StepDeviceTimes t = timeMemsets(*sync, buf.ptr, sizes);
  ASSERT_EQ(t.us.size(), 4u);
  EXPECT_EQ(t.events, 6u);
  EXPECT_EQ(t.us[3], -1);  // no call, no time
  EXPECT_GT(t.us[0], 0);
  EXPECT_LT(t.us[0], t.us[1]);
  EXPECT_LT(t.us[1], t.us[2]);
  // 64x the bytes: at least 8x the time (launch and event costs aside), and
  // a write bandwidth a device can have (10 GB/s .. 20 TB/s).
  EXPECT_GT(t.us[2], 8 * t.us[0]);
  const double gbps = static_cast<double>(sizes[2]) / (t.us[2] * 1e3);
  EXPECT_GT(gbps, 10);
  EXPECT_LT(gbps, 20000);
  for (char s : t.host_synced) EXPECT_EQ(s, 0);
}

// The gate holds a call's device work back until the host has launched all
// of it: a host pause between two launches of one call is not device time.
TEST(CudaDeviceTimer, HostPauseInsideACallIsNotDeviceTime) {
  ETB_REQUIRE_CUDA_DEVICE();
  const auto sync = makeDeviceSync("cuda");
  DeviceBuffer buf(1 << 20);
  sync->beginTiming(1);
  sync->beforeCall(0);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaMemsetAsync(buf.ptr, 1, buf.bytes, nullptr), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(cudaMemsetAsync(buf.ptr, 2, buf.bytes, nullptr), cudaSuccess);
  sync->afterCall(0);
  sync->synchronize();
  const double host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  const StepDeviceTimes t = sync->endTiming();
  ASSERT_EQ(t.us.size(), 1u);
  EXPECT_GT(t.us[0], 0);
  EXPECT_LT(t.us[0], 2000) << "device time includes the host's 20 ms pause";
  EXPECT_GE(host_us, 20000);
  EXPECT_EQ(t.host_synced[0], 0);
}

// A call that waits for the device itself cannot have its work held back
// until it returns: the gate opens on its time limit and the step is
// flagged, instead of hanging.
TEST(CudaDeviceTimer, CallThatWaitsForTheDeviceIsFlaggedNotHung) {
  ETB_REQUIRE_CUDA_DEVICE();
  const auto sync = makeDeviceSync("cuda");
  DeviceBuffer buf(1 << 20);
  sync->beginTiming(2);
  sync->beforeCall(0);
  ASSERT_EQ(cudaMemsetAsync(buf.ptr, 1, buf.bytes, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  sync->afterCall(0);
  sync->beforeCall(1);
  ASSERT_EQ(cudaMemsetAsync(buf.ptr, 2, buf.bytes, nullptr), cudaSuccess);
  sync->afterCall(1);
  sync->synchronize();
  const StepDeviceTimes t = sync->endTiming();
  EXPECT_EQ(t.host_synced[0], 1);
  EXPECT_EQ(t.host_synced[1], 0);
  EXPECT_GT(t.us[1], 0);
}

trace::Trace mmTrace(const std::vector<int64_t>& sizes) {
  test::TraceBuilder b;
  for (int64_t n : sizes) {
    b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {b.tensor({n, n}), b.tensor({n, n})},
         {b.tensor({n, n})});
  }
  trace::Trace t = b.finish();
  const trace::StrId cuda = t.strings.intern("cuda:0");
  for (trace::TensorRef& r : t.tensors) r.device = cuda;
  return t;
}

ReplayResult replayOnCuda(const trace::Trace& t, int device_op_iters) {
  ReplayOptions o = test::replayOptions(2, 5, test::Verify::kNo, "cuda");
  o.device_op_iters = device_op_iters;
  return test::replayLocal(t, o);
}

// Per op, the device time of the replayed kernels, from iterations after
// the measured ones: the measured iterations carry no events.
TEST(CudaReplay, DeviceTimePerOpFromExtraIterationsOnly) {
  if (!at::hasCUDA()) GTEST_SKIP() << "this libtorch has no CUDA (or no device)";
  const trace::Trace t = mmTrace({256, 1024, 4096});
  const ReplayResult off = replayOnCuda(t, 0);
  const ReplayResult on = replayOnCuda(t, 3);
  EXPECT_FALSE(off.device_time.has_value());  // no kernels linked, none timed
  ASSERT_TRUE(on.device_time.has_value());
  const DeviceTime& d = *on.device_time;
  EXPECT_EQ(d.iters, 3);
  EXPECT_EQ(d.timed_ops, 3u);
  EXPECT_EQ(d.events_per_iter, 6u);
  EXPECT_EQ(d.timed_iter_ms.samples.size(), 3u);
  EXPECT_EQ(on.replay_iter_ms.samples.size(), 5u);
  ASSERT_EQ(on.ops.size(), 3u);
  for (const OpStat& op : off.ops) EXPECT_EQ(op.device_us, -1);
  EXPECT_GT(on.ops[0].device_us, 0);
  EXPECT_LT(on.ops[0].device_us, on.ops[1].device_us);
  EXPECT_LT(on.ops[1].device_us, on.ops[2].device_us);
  // 4096^3 fmas: far below any device's peak (1 PFLOP/s), so device time
  // is real kernel time.
  EXPECT_GT(on.ops[2].device_us, 2.0 * 4096 * 4096 * 4096 / 1e15 * 1e6);
  EXPECT_NEAR(d.replay_ms * 1e3,
              on.ops[0].device_us + on.ops[1].device_us + on.ops[2].device_us, 1e-6);
  // GPU-bound: the measured iterations (no events) match with and without
  // the extra iterations, and the device is busy for most of them.
  EXPECT_NEAR(on.replay_iter_ms.median, off.replay_iter_ms.median,
              0.2 * off.replay_iter_ms.median + 0.05);
  EXPECT_GT(d.replay_ms, 0.5 * on.replay_iter_ms.median);
  EXPECT_LT(d.replay_ms, 1.05 * on.replay_iter_ms.median);
}

}  // namespace
}  // namespace etb::replay
