// SPDX-License-Identifier: MIT
//
// CPU utilisation, peak memory and GPU figures (NVML) of this process over a
// measured region. NVML is loaded at run time with dlopen, so etbench builds
// and runs on machines with no NVIDIA driver; there the GPU fields are absent.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "replayer/replay_result.h"

namespace etb::replay {

namespace detail {
struct Nvml;  // the loaded library and the device handle
}

// Page faults this process has taken without I/O so far (every thread).
uint64_t processMinorFaults();

class SystemSampler {
 public:
  // `gpu_index` is the NVML device index to sample (the rank's local GPU).
  // `nvml_library` is what dlopen loads; tests pass a missing name to check
  // the no-GPU path.
  explicit SystemSampler(int gpu_index = 0,
                         std::string nvml_library = "libnvidia-ml.so.1");
  ~SystemSampler();
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  // Starts the measured region; with a GPU, a background thread samples NVML
  // every ~50 ms until stop(). Calling start() again restarts the region.
  void start();
  // Ends the measured region (no-op when not started).
  void stop();
  // CPU utilisation is process CPU time (user + system, all threads) over
  // wall time of the region, so 400% means four busy cores. Peak RSS is the
  // process's lifetime high-water mark. GPU: mean utilisation, peak memory
  // used on the device, mean power; std::nullopt when NVML or a GPU is
  // missing or no sample was taken. peak_tensor_bytes is left 0 (the replay
  // engine knows it). Valid while running too (figures so far).
  SystemMetrics metrics() const;

  // Page faults served without I/O in the region, the whole process.
  uint64_t minorFaults() const;

  // True when NVML loaded and the device answered.
  bool hasGpu() const;

 private:
  void samplerLoop();
  void sampleGpu();

  std::unique_ptr<detail::Nvml> nvml_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool running_ = false;
  double wall_start_s_ = 0, cpu_start_s_ = 0;
  double wall_s_ = 0, cpu_s_ = 0;  // of the finished region
  uint64_t faults_start_ = 0, faults_ = 0;
  // GPU accumulators
  int gpu_samples_ = 0;
  double util_sum_ = 0, power_sum_w_ = 0;
  uint64_t mem_peak_ = 0;
};

}  // namespace etb::replay
