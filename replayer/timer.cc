// SPDX-License-Identifier: MIT
#include "replayer/timer.h"

#include "core/base/error.h"
#include "etb/config.h"

#if ETB_WITH_CUDA
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <utility>
#endif

namespace etb::replay {
namespace {
#if ETB_WITH_CUDA
#define ETB_TIMER_CUDA(expr)                                                              \
  do {                                                                                    \
    const cudaError_t err_ = (expr);                                                      \
    if (err_ != cudaSuccess) ETB_RUNTIME_ERROR(#expr ": ", cudaGetErrorString(err_));     \
  } while (0)

// How long a gate holds the stream at most. An op call that waits for the
// device itself (a copy to the host, a synchronising cudaFree) would wait
// for its own gate forever; the limit turns that into one stall, counted.
// Far above any op's launch time (a foreach op launching hundreds of
// kernels takes about a millisecond).
constexpr double kGateLimitUs = 50000;

// A host function on the stream that holds the op's device work back until
// the host has launched all of it, so that the events around it time the
// device work back to back, not the device waiting for the launches.
struct Gate {
  std::atomic<int> released{0};
  std::atomic<int> timed_out{0};
};

void CUDART_CB holdStream(void* p) {
  Gate* g = static_cast<Gate*>(p);
  const double deadline = nowUs() + kGateLimitUs;
  while (g->released.load(std::memory_order_acquire) == 0) {
    if (nowUs() > deadline) {
      g->timed_out.store(1, std::memory_order_release);
      return;
    }
    std::this_thread::yield();
  }
}

// Makes `device` the current one for the scope, as libtorch's device guard
// does: the thread's current device belongs to others (the NCCL backend
// sets it to the rank's).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    ETB_TIMER_CUDA(cudaGetDevice(&prev_));
    if (prev_ != device) ETB_TIMER_CUDA(cudaSetDevice(device));
    set_ = prev_ != device;
  }
  ~DeviceScope() {
    if (set_) cudaSetDevice(prev_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = 0;
  bool set_ = false;
};

// Uses the CUDA runtime directly: the libtorch we build against may be
// CPU-only, so c10/cuda is not available. Events go on the legacy default
// stream (handle 0): et_replay never sets a stream, so libtorch's current
// stream is its default one, which is that stream, and the portable c10
// headers give a stream's id but not its handle.
class CudaSync final : public DeviceSync {
 public:
  explicit CudaSync(int device) : device_(device) {}
  ~CudaSync() override {
    for (auto& [a, b] : events_) {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  }

  void synchronize() override { ETB_TIMER_CUDA(cudaDeviceSynchronize()); }

  bool timesDevice() const override { return true; }

  void beginTiming(size_t steps) override {
    const DeviceScope on(device_);
    while (events_.size() < steps) {
      std::pair<cudaEvent_t, cudaEvent_t> e{};
      ETB_TIMER_CUDA(cudaEventCreate(&e.first));
      ETB_TIMER_CUDA(cudaEventCreate(&e.second));
      events_.push_back(e);
    }
    gate_of_.assign(steps, kNotTimed);
    ungated_.resize(steps, 0);
    gates_used_ = 0;
    events_recorded_ = 0;
  }

  void beforeCall(size_t step) override {
    if (step >= gate_of_.size()) return;
    const DeviceScope on(device_);
    gate_of_[step] = kUngated;
    if (!ungated_[step]) {
      if (gates_used_ == gates_.size()) gates_.push_back(std::make_unique<Gate>());
      Gate& g = *gates_[gates_used_];
      g.released.store(0);
      g.timed_out.store(0);
      gate_of_[step] = static_cast<int64_t>(gates_used_++);
      ETB_TIMER_CUDA(cudaLaunchHostFunc(kStream, holdStream, &g));
    }
    ETB_TIMER_CUDA(cudaEventRecord(events_[step].first, kStream));
    ++events_recorded_;
  }

  void afterCall(size_t step) override {
    if (step >= gate_of_.size() || gate_of_[step] == kNotTimed) return;
    const DeviceScope on(device_);
    ETB_TIMER_CUDA(cudaEventRecord(events_[step].second, kStream));
    ++events_recorded_;
    if (gate_of_[step] >= 0) {
      gates_[static_cast<size_t>(gate_of_[step])]->released.store(1, std::memory_order_release);
    }
  }

  // After synchronize(): every event and host function has run. A step
  // whose gate ran out of time is not gated again (one stall per such op,
  // not one per iteration); its time stays flagged.
  StepDeviceTimes endTiming() override {
    StepDeviceTimes t;
    t.us.assign(gate_of_.size(), -1.0);
    t.host_synced.assign(gate_of_.size(), 0);
    t.events = events_recorded_;
    for (size_t i = 0; i < gate_of_.size(); ++i) {
      if (gate_of_[i] == kNotTimed) continue;
      float ms = 0;
      // synchronize() waits for the current device, which need not be ours.
      ETB_TIMER_CUDA(cudaEventSynchronize(events_[i].second));
      ETB_TIMER_CUDA(cudaEventElapsedTime(&ms, events_[i].first, events_[i].second));
      t.us[i] = static_cast<double>(ms) * 1e3;
      if (gate_of_[i] >= 0 && gates_[static_cast<size_t>(gate_of_[i])]->timed_out.load() != 0) {
        ungated_[i] = 1;
      }
      t.host_synced[i] = ungated_[i];
    }
    gate_of_.clear();
    return t;
  }

 private:
  static constexpr cudaStream_t kStream = nullptr;
  static constexpr int64_t kNotTimed = -1, kUngated = -2;
  int device_;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;  // per step, reused
  std::vector<std::unique_ptr<Gate>> gates_;  // stable addresses: the driver holds them
  size_t gates_used_ = 0;
  std::vector<int64_t> gate_of_;  // per step: its last call's gate, kNotTimed, kUngated
  std::vector<char> ungated_;     // per step: its call waits for the device (kept)
  uint64_t events_recorded_ = 0;
};
#endif
}  // namespace

std::string deviceModel(const std::string& device) {
  if (device.rfind("cuda", 0) != 0) return "";
#if ETB_WITH_CUDA
  const size_t colon = device.find(':');
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, colon == std::string::npos ? 0 : std::atoi(device.c_str() + colon + 1)) !=
      cudaSuccess) {
    return "";
  }
  return prop.name;
#else
  return "";
#endif
}

std::unique_ptr<DeviceSync> makeDeviceSync(const std::string& device) {
  if (device.rfind("cuda", 0) != 0) return std::make_unique<DeviceSync>();
#if ETB_WITH_CUDA
  const size_t colon = device.find(':');
  return std::make_unique<CudaSync>(colon == std::string::npos ? 0 : std::atoi(device.c_str() + colon + 1));
#else
  ETB_RUNTIME_ERROR("device ", device, " needs etbench built with ETB_WITH_CUDA=ON");
#endif
}

}  // namespace etb::replay
