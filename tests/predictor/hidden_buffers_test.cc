// SPDX-License-Identifier: MIT
// The buffers hiddenBuffers() says a convolution allocates inside its call,
// against what this libtorch allocates: a recording c10 CPU allocator (the
// one ATen's tensors and, through PyTorch's ideep registration, oneDNN's
// reordered copies come from) logs every block's size as the real op runs.
// The expected sequence is libtorch's; the script is only read from the
// trace node that describes the same call.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

#include "core/model/trace.h"
#include "predictor/hidden_buffers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::TraceBuilder;

// Sizes of the blocks allocated (+) and freed (-) while recording, in order.
class Recorder final : public c10::Allocator {
 public:
  static Recorder& get() {
    static Recorder r;
    return r;
  }
  // libtorch 2.x made c10::Allocator::allocate non-const (1.13's is const) and added a pure
  // copy_data: both forms are declared, without `override`, so that this builds on either.
  c10::DataPtr allocate(size_t n) const { return take(n); }
  c10::DataPtr allocate(size_t n) { return take(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const {
    if (count > 0) std::memcpy(dest, src, count);
  }
  c10::DeleterFnPtr raw_deleter() const { return &release; }

 private:
  c10::DataPtr take(size_t n) const {
    void* p = nullptr;
    if (posix_memalign(&p, 64, std::max<size_t>(n, 1)) != 0) throw std::bad_alloc();
    std::lock_guard<std::mutex> lock(mu_);
    sizes_[p] = n;
    if (on_ && n > 0) log_.push_back(static_cast<double>(n));  // empty tensors hold no block
    // The context is the data: c10::Allocator::raw_allocate (ideep's path)
    // requires it.
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }

 public:
  // Runs `fn` with this allocator in place; returns its log.
  template <typename Fn>
  std::vector<double> record(Fn fn) {
    c10::Allocator* before = c10::GetCPUAllocator();
    c10::SetCPUAllocator(this, kPriority);
    {
      std::lock_guard<std::mutex> lock(mu_);
      log_.clear();
      on_ = true;
    }
    fn();
    {
      std::lock_guard<std::mutex> lock(mu_);
      on_ = false;
    }
    c10::SetCPUAllocator(before, kPriority);
    return log_;
  }

 private:
  static constexpr uint8_t kPriority = 200;
  static void release(void* p) {
    Recorder& r = get();
    {
      std::lock_guard<std::mutex> lock(r.mu_);
      const auto it = r.sizes_.find(p);
      if (it != r.sizes_.end()) {
        if (r.on_ && it->second > 0) r.log_.push_back(-static_cast<double>(it->second));
        r.sizes_.erase(it);
      }
    }
    std::free(p);
  }
  mutable std::mutex mu_;
  mutable std::unordered_map<void*, size_t> sizes_;
  mutable std::vector<double> log_;
  bool on_ = false;
};

// The script as the allocator would log it: hidden blocks and the recorded
// outputs (+ on allocation, - when freed inside the call). Objects of the
// primitive cache come from oneDNN's own new/delete, not this allocator.
std::vector<double> asLog(const trace::Trace& t, const trace::Node& n,
                          const std::vector<HiddenAction>& script) {
  std::vector<double> log, hidden;
  for (const HiddenAction& a : script) {
    if (a.kind == HiddenAction::kAlloc) {
      hidden.push_back(a.bytes);
      log.push_back(a.bytes);
    } else if (a.kind == HiddenAction::kFree) {
      log.push_back(-hidden.at(a.index));
    } else if (a.kind == HiddenAction::kOutput) {
      const trace::TensorRef& r = t.tensors[n.outputs.at(a.index).tensor];
      log.push_back(static_cast<double>(r.numel) * 4);
    }
  }
  return log;
}

struct Conv {
  int64_t batch, in_c, out_c, hw, kernel, stride, padding;
  std::vector<int64_t> inputShape() const { return {batch, in_c, hw, hw}; }
  std::vector<int64_t> weightShape() const { return {out_c, in_c, kernel, kernel}; }
  std::vector<int64_t> outputShape() const {
    const int64_t o = (hw + 2 * padding - kernel) / stride + 1;
    return {batch, out_c, o, o};
  }
};

class HiddenBuffers : public ::testing::Test {
 protected:
  void SetUp() override {
    threads_ = at::get_num_threads();
    at::set_num_threads(1);
  }
  void TearDown() override { at::set_num_threads(threads_); }
  int threads_ = 1;
};

std::vector<double> forwardScript(const Conv& c, trace::Trace* keep) {
  TraceBuilder b;
  const auto x = b.tensor(c.inputShape()), w = b.tensor(c.weightShape()), y = b.tensor(c.outputShape());
  b.op("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
       "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
       {x, w, trace::makeNone(b.trace()), test::intList(b.trace(), {c.stride, c.stride}),
        test::intList(b.trace(), {c.padding, c.padding}), test::intList(b.trace(), {1, 1}),
        trace::makeInt(b.trace(), 1)},
       {y});
  *keep = b.finish();
  const trace::Node& n = keep->nodes.back();
  return asLog(*keep, n, hiddenBuffers(*keep, n, 1));
}

std::vector<double> forwardLog(const Conv& c) {
  const at::Tensor x = at::randn(c.inputShape()), w = at::randn(c.weightShape());
  at::conv2d(x, w, {}, {c.stride, c.stride}, {c.padding, c.padding});  // oneDNN's caches warm
  at::Tensor y;  // outlives the call, as in a replay: its free is not in the log
  return Recorder::get().record(
      [&] { y = at::conv2d(x, w, {}, {c.stride, c.stride}, {c.padding, c.padding}); });
}

TEST_F(HiddenBuffers, ConvForwardReordersTheWeightAndAWideInputAndComputesBlocked) {
  for (const Conv& c : {Conv{8, 64, 64, 28, 3, 1, 1}, Conv{8, 128, 256, 14, 3, 2, 1}}) {
    trace::Trace t;
    const std::vector<double> script = forwardScript(c, &t);
    EXPECT_EQ(script, forwardLog(c)) << "conv " << c.in_c << "->" << c.out_c;
    // The weight's copy is among the blocks: the point of the model.
    EXPECT_NE(std::find(script.begin(), script.end(), c.out_c * c.in_c * c.kernel * c.kernel * 4.0),
              script.end());
  }
}

TEST_F(HiddenBuffers, AnRgbInputIsReadInPlace) {
  const Conv c{8, 3, 64, 56, 7, 2, 3};
  trace::Trace t;
  EXPECT_EQ(forwardScript(c, &t), forwardLog(c));
}

TEST_F(HiddenBuffers, ASingleThreadedOneByOneConvOfOneImageTakesTheNativePath) {
  // PyTorch keeps oneDNN off for a stride-1 1x1 kernel, batch under 16, one
  // thread: nothing but the output is allocated.
  const Conv c{1, 64, 64, 14, 1, 1, 0};
  trace::Trace t;
  EXPECT_TRUE(forwardScript(c, &t).empty());
  const double output = c.batch * c.out_c * c.hw * c.hw * 4.0;
  EXPECT_EQ(forwardLog(c), std::vector<double>{output});
}

TEST_F(HiddenBuffers, ConvBackwardReordersForTheDataGradientThenForTheWeightGradient) {
  const Conv c{8, 64, 64, 28, 3, 1, 1};
  TraceBuilder b;
  const auto dy = b.tensor(c.outputShape()), x = b.tensor(c.inputShape()), w = b.tensor(c.weightShape());
  const auto dx = b.tensor(c.inputShape()), dw = b.tensor(c.weightShape());
  trace::Value undefined = b.tensor({0});
  trace::Value mask;
  mask.kind = trace::ValueKind::kList;
  for (bool m : {true, true, false}) mask.items.push_back(trace::makeBool(b.trace(), m));
  b.op("aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
       "SymInt[1]? bias_sizes, int[] stride, SymInt[] padding, int[] dilation, bool transposed, "
       "SymInt[] output_padding, int groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
       {dy, x, w, trace::makeNone(b.trace()), test::intList(b.trace(), {1, 1}),
        test::intList(b.trace(), {1, 1}), test::intList(b.trace(), {1, 1}), trace::makeBool(b.trace(), false),
        test::intList(b.trace(), {0, 0}), trace::makeInt(b.trace(), 1), mask},
       {dx, dw, undefined});
  const trace::Trace t = b.finish();
  const trace::Node& n = t.nodes.back();
  const std::vector<double> script = asLog(t, n, hiddenBuffers(t, n, 1));

  const at::Tensor gy = at::randn(c.outputShape()), xi = at::randn(c.inputShape()),
                   wi = at::randn(c.weightShape());
  auto call = [&] {
    return at::convolution_backward(gy, xi, wi, c10::nullopt, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1,
                                    {true, true, false});
  };
  call();
  std::tuple<at::Tensor, at::Tensor, at::Tensor> out;
  const std::vector<double> log = Recorder::get().record([&] { out = call(); });
  EXPECT_EQ(script, log);
}

}  // namespace
}  // namespace etb::predict
