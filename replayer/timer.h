// SPDX-License-Identifier: MIT
//
// Time sources. Host time for ops; a DeviceSync that makes an iteration's
// end mean "the device is done" (CUDA: cudaDeviceSynchronize, compiled only
// with ETB_WITH_CUDA; CPU: nothing to wait for).
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace etb::replay {

inline double nowUs() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

class DeviceSync {
 public:
  virtual ~DeviceSync() = default;
  virtual void synchronize() {}
};

// For "cpu" a no-op sync; for "cuda..." the CUDA one (throws RuntimeError
// when etbench was built without ETB_WITH_CUDA).
std::unique_ptr<DeviceSync> makeDeviceSync(const std::string& device);

}  // namespace etb::replay
