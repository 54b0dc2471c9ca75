// SPDX-License-Identifier: MIT
#include "replayer/timer.h"

#include "core/base/error.h"
#include "etb/config.h"

#if ETB_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace etb::replay {
namespace {
#if ETB_WITH_CUDA
// Uses the CUDA runtime directly: the libtorch we build against may be
// CPU-only, so c10/cuda is not available.
class CudaSync final : public DeviceSync {
 public:
  void synchronize() override {
    const cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
      ETB_RUNTIME_ERROR("cudaDeviceSynchronize(): ", cudaGetErrorString(err));
    }
  }
};
#endif
}  // namespace

std::unique_ptr<DeviceSync> makeDeviceSync(const std::string& device) {
  if (device.rfind("cuda", 0) != 0) return std::make_unique<DeviceSync>();
#if ETB_WITH_CUDA
  return std::make_unique<CudaSync>();
#else
  ETB_RUNTIME_ERROR("device ", device, " needs etbench built with ETB_WITH_CUDA=ON");
#endif
}

}  // namespace etb::replay
