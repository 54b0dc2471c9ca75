// SPDX-License-Identifier: MIT
#include "replayer/system_metrics.h"

#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/base/log.h"

namespace etb::replay {
namespace detail {

// The few NVML entry points we use, declared by hand so that no NVML header
// is needed at build time (their ABI has been stable since NVML 5).
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlDevice = void*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleFn = int (*)(unsigned int, NvmlDevice*);
using UtilFn = int (*)(NvmlDevice, NvmlUtilization*);
using MemFn = int (*)(NvmlDevice, NvmlMemory*);
using PowerFn = int (*)(NvmlDevice, unsigned int*);  // milliwatts

struct Nvml {
  void* lib = nullptr;
  ShutdownFn shutdown = nullptr;
  UtilFn util = nullptr;
  MemFn mem = nullptr;
  PowerFn power = nullptr;
  NvmlDevice device = nullptr;

  ~Nvml() {
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }
};

}  // namespace detail

namespace {
constexpr int kNvmlSuccess = 0;
constexpr auto kSamplePeriod = std::chrono::milliseconds(50);

template <typename Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

// Loads NVML and opens device `index`; nullptr (logged at INFO, not an error)
// when the library, a symbol or the device is missing.
std::unique_ptr<detail::Nvml> loadNvml(const std::string& library,
                                       int index) {
  auto nvml = std::make_unique<detail::Nvml>();
  nvml->lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!nvml->lib) {
    ETB_LOG(kDebug) << "NVML not loaded (" << library << "): no GPU metrics";
    return nullptr;
  }
  auto init = symbol<detail::InitFn>(nvml->lib, "nvmlInit_v2");
  auto handle = symbol<detail::HandleFn>(nvml->lib,
                                         "nvmlDeviceGetHandleByIndex_v2");
  nvml->util = symbol<detail::UtilFn>(nvml->lib, "nvmlDeviceGetUtilizationRates");
  nvml->mem = symbol<detail::MemFn>(nvml->lib, "nvmlDeviceGetMemoryInfo");
  nvml->power = symbol<detail::PowerFn>(nvml->lib, "nvmlDeviceGetPowerUsage");
  auto shutdown = symbol<detail::ShutdownFn>(nvml->lib, "nvmlShutdown");
  if (!init || !handle || !nvml->util || !nvml->mem || !nvml->power ||
      !shutdown || init() != kNvmlSuccess) {
    ETB_LOG(kInfo) << "NVML present but unusable: no GPU metrics";
    return nullptr;
  }
  nvml->shutdown = shutdown;  // initialised: the destructor shuts it down
  if (index < 0 ||
      handle(static_cast<unsigned>(index), &nvml->device) != kNvmlSuccess) {
    ETB_LOG(kInfo) << "NVML has no GPU " << index << ": no GPU metrics";
    return nullptr;
  }
  return nvml;
}

double wallSeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch())
      .count();
}

double toSeconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) +
         static_cast<double>(tv.tv_usec) * 1e-6;
}

// User + system CPU time of every thread of this process.
double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return toSeconds(ru.ru_utime) + toSeconds(ru.ru_stime);
}


uint64_t peakRssBytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // Linux: kilobytes
}
}  // namespace

uint64_t processMinorFaults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_minflt);
}

SystemSampler::SystemSampler(int gpu_index, std::string nvml_library)
    : nvml_(loadNvml(nvml_library, gpu_index)) {}

SystemSampler::~SystemSampler() { stop(); }

bool SystemSampler::hasGpu() const { return nvml_ != nullptr; }

void SystemSampler::start() {
  stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = true;
    gpu_samples_ = 0;
    util_sum_ = power_sum_w_ = 0;
    mem_peak_ = 0;
    wall_s_ = cpu_s_ = 0;
    wall_start_s_ = wallSeconds();
    cpu_start_s_ = cpuSeconds();
    faults_start_ = processMinorFaults();
    faults_ = 0;
  }
  if (nvml_) thread_ = std::thread([this] { samplerLoop(); });
}

void SystemSampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    running_ = false;
    wall_s_ = wallSeconds() - wall_start_s_;
    cpu_s_ = cpuSeconds() - cpu_start_s_;
    faults_ = processMinorFaults() - faults_start_;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SystemSampler::samplerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (running_) {
    lock.unlock();
    sampleGpu();
    lock.lock();
    cv_.wait_for(lock, kSamplePeriod, [this] { return !running_; });
  }
  lock.unlock();
  sampleGpu();  // one at the end, so short regions get two samples
}

void SystemSampler::sampleGpu() {
  detail::NvmlUtilization util{};
  detail::NvmlMemory mem{};
  unsigned int milliwatts = 0;
  // A call can fail transiently (or power be unsupported); skip that sample.
  if (nvml_->util(nvml_->device, &util) != kNvmlSuccess ||
      nvml_->mem(nvml_->device, &mem) != kNvmlSuccess ||
      nvml_->power(nvml_->device, &milliwatts) != kNvmlSuccess) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++gpu_samples_;
  util_sum_ += util.gpu;
  power_sum_w_ += milliwatts / 1000.0;
  mem_peak_ = std::max<uint64_t>(mem_peak_, mem.used);
}

uint64_t SystemSampler::minorFaults() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_ ? processMinorFaults() - faults_start_ : faults_;
}

SystemMetrics SystemSampler::metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  SystemMetrics m;
  const double wall = running_ ? wallSeconds() - wall_start_s_ : wall_s_;
  const double cpu = running_ ? cpuSeconds() - cpu_start_s_ : cpu_s_;
  if (wall > 0) m.cpu_util_pct = 100.0 * cpu / wall;
  m.peak_rss_bytes = peakRssBytes();
  if (gpu_samples_ > 0) {
    m.gpu_util_pct = util_sum_ / gpu_samples_;
    m.gpu_mem_bytes = mem_peak_;
    m.gpu_power_w = power_sum_w_ / gpu_samples_;
  }
  return m;
}

}  // namespace etb::replay
