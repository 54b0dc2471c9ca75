// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "replayer/system_metrics.h"
#include "tests/test_util.h"

namespace etb::replay {
namespace {

// Spins for `ms` milliseconds of wall time; returns a value the compiler
// cannot drop.
double burnCpu(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile double x = 1;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  }
  return x;
}

// This process's CPU seconds from the kernel's per-process clock, a source
// the sampler does not use (it reads getrusage).
double processCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double wallSecondsNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 100 x this process's CPU time / wall time since construction, measured
// independently of the sampler.
class IndependentCpu {
 public:
  double pct() const {
    return 100.0 * (processCpuSeconds() - cpu0_) / (wallSecondsNow() - wall0_);
  }

 private:
  double cpu0_ = processCpuSeconds(), wall0_ = wallSecondsNow();
};

// getrusage ticks are coarser than the per-process clock: a few points.
constexpr double kCpuTolerancePct = 8.0;

// The sampler's CPU utilisation over a region where two threads spin must
// equal the independent figure. On an idle 2-core machine that is ~200%;
// under load less, which is why the check is against the independent
// figure, not a constant.
TEST(SystemSampler, CpuUtilisationMatchesAnIndependentClock) {
  IndependentCpu clock;
  SystemSampler sampler;
  sampler.start();
  std::vector<std::thread> spinners;
  for (int i = 0; i < 2; ++i) spinners.emplace_back([] { burnCpu(400); });
  for (std::thread& t : spinners) t.join();
  sampler.stop();
  const double want = clock.pct();
  EXPECT_NEAR(sampler.metrics().cpu_util_pct, want, kCpuTolerancePct);
  EXPECT_GT(want, 5.0) << "the spinners hardly ran; the comparison proves little";
}

TEST(SystemSampler, PeakRssCoversATouchedBlock) {
  const size_t bytes = size_t{256} << 20;
  auto block = std::make_unique<char[]>(bytes);
  std::memset(block.get(), 1, bytes);  // touch it, so it is resident
  SystemSampler sampler;
  sampler.start();
  sampler.stop();
  EXPECT_GE(sampler.metrics().peak_rss_bytes, bytes);
  EXPECT_EQ(block[bytes - 1], 1);
}

TEST(SystemSampler, IdleRegionHasLowCpu) {
  SystemSampler sampler;
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  sampler.stop();
  EXPECT_LT(sampler.metrics().cpu_util_pct, 30);
}

TEST(SystemSampler, MissingNvmlMeansNoGpuFigures) {
  SystemSampler sampler(0, "libnvidia-ml-does-not-exist.so.1");
  EXPECT_FALSE(sampler.hasGpu());
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  sampler.stop();
  const SystemMetrics m = sampler.metrics();
  EXPECT_FALSE(m.gpu_util_pct.has_value());
  EXPECT_FALSE(m.gpu_mem_bytes.has_value());
  EXPECT_FALSE(m.gpu_power_w.has_value());
}

// On a machine with an NVIDIA GPU this reads real figures; elsewhere it
// checks the default path also degrades to "absent".
TEST(SystemSampler, DefaultNvmlEitherWorksOrIsAbsent) {
  SystemSampler sampler;
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  sampler.stop();
  const SystemMetrics m = sampler.metrics();
  if (!sampler.hasGpu()) {
    EXPECT_FALSE(m.gpu_util_pct.has_value());
    GTEST_SKIP() << "no NVML/GPU here: GPU figures absent as expected";
  }
  ASSERT_TRUE(m.gpu_util_pct.has_value());
  EXPECT_GE(*m.gpu_util_pct, 0);
  EXPECT_LE(*m.gpu_util_pct, 100);
  ASSERT_TRUE(m.gpu_mem_bytes.has_value());
  EXPECT_GT(*m.gpu_mem_bytes, 0u);
  ASSERT_TRUE(m.gpu_power_w.has_value());
  EXPECT_GT(*m.gpu_power_w, 1);
}

// Builds tests/replayer/fake_nvml.c into a shared library with the system C
// compiler; "" when that is not possible.
std::string buildFakeNvml() {
  static const std::string path = [] {
    const std::string lib = test::makeTempDir("fake_nvml") + "/libfake-nvml.so";
    std::string out;
    const std::string cmd = "cc -shared -fPIC -o '" + lib + "' '" +
                            std::string(ETB_SOURCE_DIR) +
                            "/tests/replayer/fake_nvml.c'";
    return test::runCommand(cmd, &out) == 0 ? lib : std::string();
  }();
  return path;
}

#define ETB_REQUIRE_FAKE_NVML(var)                                  \
  const std::string var = buildFakeNvml();                          \
  if (var.empty()) GTEST_SKIP() << "no C compiler to build fake_nvml.c"

// The GPU path against a stand-in NVML (tests/replayer/fake_nvml.c): the
// figures are the mean utilisation, peak memory and mean power it reports.
TEST(SystemSampler, AveragesNvmlSamples) {
  ETB_REQUIRE_FAKE_NVML(fake);
  SystemSampler sampler(0, fake);
  ASSERT_TRUE(sampler.hasGpu());
  sampler.start();
  // ~50 ms period: 600 ms gives well over 8 samples, so memory peaks at 8 GiB.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  sampler.stop();
  const SystemMetrics m = sampler.metrics();
  ASSERT_TRUE(m.gpu_util_pct.has_value());
  EXPECT_GE(*m.gpu_util_pct, 40);  // 40/60 alternating: an odd count is
  EXPECT_LE(*m.gpu_util_pct, 52);  // slightly below 50
  EXPECT_EQ(m.gpu_mem_bytes, uint64_t{8} << 30);
  EXPECT_EQ(m.gpu_power_w, 250.0);
}

TEST(SystemSampler, MissingGpuIndexMeansNoGpuFigures) {
  ETB_REQUIRE_FAKE_NVML(fake);
  SystemSampler sampler(3, fake);
  EXPECT_FALSE(sampler.hasGpu());
  sampler.start();
  sampler.stop();
  EXPECT_FALSE(sampler.metrics().gpu_util_pct.has_value());
}

// Read while running, the figure covers the region so far; a restart
// forgets the busy region before it (an idle region after a busy one reads
// idle); stopping twice keeps the first stop's figure.
TEST(SystemSampler, MetricsWhileRunningAndRestart) {
  SystemSampler sampler;
  IndependentCpu busy;
  sampler.start();
  burnCpu(200);
  EXPECT_NEAR(sampler.metrics().cpu_util_pct, busy.pct(), kCpuTolerancePct);
  IndependentCpu idle;
  sampler.start();  // restarts the region
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  sampler.stop();
  const double got = sampler.metrics().cpu_util_pct;
  EXPECT_NEAR(got, idle.pct(), kCpuTolerancePct);
  burnCpu(100);
  sampler.stop();  // idempotent: the region stays the idle one
  EXPECT_DOUBLE_EQ(sampler.metrics().cpu_util_pct, got);
}

}  // namespace
}  // namespace etb::replay
