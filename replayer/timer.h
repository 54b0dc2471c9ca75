// SPDX-License-Identifier: MIT
//
// Time sources. Host time for ops; a DeviceSync that makes an iteration's
// end mean "the device is done" (CUDA: cudaDeviceSynchronize, compiled only
// with ETB_WITH_CUDA; CPU: nothing to wait for) and, on CUDA, times each op
// call's device work with a pair of CUDA events.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace etb::replay {

inline double nowUs() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

// Device time of the op calls of one timed iteration, per plan step.
struct StepDeviceTimes {
  std::vector<double> us;  // -1: the step made no timed call
  // The step's call waited for the device itself (a copy to the host, a
  // synchronising free): its gate opened on the time limit, and its time
  // may include the device waiting for the host.
  std::vector<char> host_synced;
  uint64_t events = 0;  // events recorded in the iteration
};

class DeviceSync {
 public:
  virtual ~DeviceSync() = default;
  virtual void synchronize() {}

  // Per-step device timing (CUDA only; here nothing is timed). An iteration
  // with timing: beginTiming(steps); per op call beforeCall(step) right
  // before and afterCall(step) right after it (a retried call re-times the
  // step); synchronize(); endTiming(). The events cost host time: only
  // iterations whose host times are not reported may be timed.
  virtual bool timesDevice() const { return false; }
  virtual void beginTiming(size_t /*steps*/) {}
  virtual void beforeCall(size_t /*step*/) {}
  virtual void afterCall(size_t /*step*/) {}
  virtual StepDeviceTimes endTiming() { return {}; }
};

// For "cpu" a no-op sync; for "cuda..." the CUDA one (throws RuntimeError
// when etbench was built without ETB_WITH_CUDA).
std::unique_ptr<DeviceSync> makeDeviceSync(const std::string& device);

// The model name of a "cuda[:N]" device ("NVIDIA H100 80GB HBM3"); "" for
// the CPU, or where etbench was built without ETB_WITH_CUDA or the device
// cannot be asked.
std::string deviceModel(const std::string& device);

}  // namespace etb::replay
