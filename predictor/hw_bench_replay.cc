// SPDX-License-Identifier: MIT
// et_profile_hw: the replayer's own cost per op. The kernel curves time
// each op alone in a hot loop; et_replay also builds every call's stack,
// stamps the clock, releases dead tensors and walks its plan, and calls a
// different kernel each time (colder code and branch history). A chain of
// tiny ops of several kinds, replayed by the engine itself, less the same
// calls timed one kind at a time, is that cost, independent of any trace.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/base/log.h"
#include "core/model/tiny_op_chain.h"
#include "predictor/hw_bench.h"
#include "predictor/timing.h"
#include "replayer/replayer.h"
#include "replayer/timer.h"

namespace etb::predict {
namespace {
constexpr int kOps = 600;
constexpr int64_t kElems = 8;

// Different kernels in turn (elementwise, unary, activation, reduction).
const std::vector<trace::TinyOp> kKinds = {
    {"aten::add", "Tensor", "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", true},
    {"aten::mul", "Tensor", "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", true},
    {"aten::relu", "", "aten::relu(Tensor self) -> Tensor", false},
    {"aten::neg", "", "aten::neg(Tensor self) -> Tensor", false},
    {"aten::sigmoid", "", "aten::sigmoid(Tensor self) -> Tensor", false},
    {"aten::sub", "Tensor", "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", true},
};

// On a GPU, sixteen kernels in turn: a replay calls many kinds, and the
// host's launch path for each is colder than in a hot loop of one kind.
const std::vector<trace::TinyOp> kGpuKinds = {
    kKinds[0], kKinds[1], kKinds[2], kKinds[3], kKinds[4], kKinds[5],
    {"aten::div", "Tensor", "aten::div.Tensor(Tensor self, Tensor other) -> Tensor", true},
    {"aten::maximum", "", "aten::maximum(Tensor self, Tensor other) -> Tensor", true},
    {"aten::minimum", "", "aten::minimum(Tensor self, Tensor other) -> Tensor", true},
    {"aten::tanh", "", "aten::tanh(Tensor self) -> Tensor", false},
    {"aten::abs", "", "aten::abs(Tensor self) -> Tensor", false},
    {"aten::sin", "", "aten::sin(Tensor self) -> Tensor", false},
    {"aten::cos", "", "aten::cos(Tensor self) -> Tensor", false},
    {"aten::exp", "", "aten::exp(Tensor self) -> Tensor", false},
    {"aten::erf", "", "aten::erf(Tensor self) -> Tensor", false},
    {"aten::silu", "", "aten::silu(Tensor self) -> Tensor", false},
};

// Views in turn: no kernel, no data: what et_replay spends around a call
// that launches nothing.
const std::vector<trace::TinyOp> kViews = {
    {"aten::detach", "", "aten::detach(Tensor(a) self) -> Tensor(a)", false},
    {"aten::alias", "", "aten::alias(Tensor(a) self) -> Tensor(a)", false},
    {"aten::t", "", "aten::t(Tensor(a) self) -> Tensor(a)", false},
};

// The CPU kernels with a view after each: what a view costs in a replay
// right after a kernel of another kind (HwProfile::call_cold_view_us).
const std::vector<trace::TinyOp> kKernelsAndViews = {
    kKinds[0], kViews[0], kKinds[1], kViews[1], kKinds[2], kViews[2],
    kKinds[3], kViews[0], kKinds[4], kViews[1], kKinds[5], kViews[2],
};

// Hot-loop time of one call of each kind, as the kernel curves take it.
double hotChainUs(const std::vector<trace::TinyOp>& kinds_of, const ProfileOptions& o) {
  const at::Tensor x = at::rand({kElems}, tensorsOn(o)), w = at::rand({kElems}, tensorsOn(o));
  double sum = 0;
  const size_t kinds = kinds_of.size();
  for (size_t i = 0; i < kinds; ++i) {
    const trace::TinyOp& k = kinds_of[i];
    std::vector<c10::IValue> args{x};
    if (k.binary) args.emplace_back(w);
    if (std::string(k.schema).find("alpha") != std::string::npos) args.emplace_back(c10::Scalar(1));
    const double us = timeOp(k.name, k.overload, args, o.quick);
    sum += us * static_cast<double>((kOps - static_cast<int>(i) + static_cast<int>(kinds) - 1) /
                                    static_cast<int>(kinds));
  }
  return sum;
}

// Waits `us` on the clock alone: no memory traffic of its own, so what the
// next call loses is what the machine took from the caches meanwhile.
void spinUs(double us) {
  const double t0 = replay::nowUs();
  while (replay::nowUs() - t0 < us) {
  }
}

// A chain of `kinds` per op: replayed by the engine, and the same calls in
// hot loops.
struct ChainCost {
  double replay_us = 0, hot_us = 0;
};

ChainCost chainCost(const std::vector<trace::TinyOp>& kinds, const ProfileOptions& o) {
  const trace::Trace t = trace::tinyOpChain(kinds, kOps, kElems, "et_profile_hw:replay-step");
  replay::ReplayOptions ro;
  ro.threads = o.threads;
  ro.device = o.device;
  ro.warmup = 3;
  ro.iters = o.quick ? 9 : 31;
  const std::unique_ptr<replay::Communicator> local = replay::makeLocalCommunicator();
  const LogLevel level = logLevel();
  setLogLevel(LogLevel::kWarn);  // the replayer's "replaying N nodes" line
  // Guarded like the hot loops it is set against (timing.h): both at the
  // fastest probe's speed, or the step would take in the slowdown divided
  // out of the hot calls (on a VM whose probe ran 1.8x its fastest, 0.85 us
  // a step).
  const std::vector<double> replay_us = guardedSamples([&] {
    const replay::ReplayResult r = replay::replayTrace(t, ro, *local);
    return std::vector<double>{r.replay_iter_ms.median * 1e3 / kOps};
  });
  setLogLevel(level);
  return {replay_us.front(), hotChainUs(kinds, o) / kOps};
}
}  // namespace

namespace detail {
void measureColdAfter(const ProfileOptions& o, HwProfile& hw) {
  const at::Tensor a = at::ones({1}), b = at::ones({1});
  const c10::OperatorHandle add =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor");
  std::vector<c10::IValue> stack;
  const auto callUs = [&] {
    const double t0 = replay::nowUs();
    stack = {a, b, c10::Scalar(1)};
    add.callBoxed(stack);
    return replay::nowUs() - t0;
  };
  const std::vector<double> after = o.quick ? std::vector<double>{300, 3000}
                                            : std::vector<double>{100, 300, 1000, 3000, 10000};
  const int reps = o.quick ? 7 : 21;
  double extra = 0;
  hw.cold_after.clear();
  for (const double us : after) {
    // Guarded, the difference at the fastest probe's speed like the other
    // curves (et_predict multiplies the typical slowdown in).
    const std::vector<double> d = guardedSamples([&] {
      std::vector<double> first, hot;
      for (int r = 0; r < reps; ++r) {
        spinUs(us);
        first.push_back(callUs());
        hot.push_back(callUs());
      }
      return std::vector<double>{medianOf(first) - medianOf(hot)};
    });
    // A longer stretch cannot leave more in the caches than a shorter one;
    // each stretch's extra is the median of its rounds (HwProfile::rounds).
    const std::string round = "cold_after:" + std::to_string(static_cast<long long>(us));
    extra = std::max(extra, addRound(hw, round, d.front()));
    hw.cold_after.push_back({us, extra});
  }
  if (o.progress) {
    o.progress("cold call: +" + std::to_string(hw.cold_after.back().us) + " us after " +
               std::to_string(after.back() / 1e3) + " ms of other work");
  }
}

// Some fifty kinds of small ops, each down code of its own (GEMMs, convs,
// pooling, norms, reductions, scans, sorts, indexing, losses, elementwise
// and activation kernels): what an iteration of a small model runs between
// two calls of one kind.
class KindRotation {
 public:
  KindRotation() {
    a_ = at::rand({16, 16});
    b_ = at::rand({16, 16});
    v_ = at::rand({64});
    img_ = at::rand({1, 4, 8, 8});
    k_ = at::rand({4, 4, 3, 3});
    idx_ = at::randint(0, 16, {8}, at::TensorOptions().dtype(at::kLong));
    gather_idx_ = at::randint(0, 16, {16, 4}, at::TensorOptions().dtype(at::kLong));
    mask_ = a_ > 0.5;
    log_probs_ = at::log_softmax(a_, 1);
    probs_ = a_.clamp(0.01, 0.99);
    ch_ = at::ones({4});
    mean_ = at::zeros({4});
    var_ = at::ones({4});
    ops_ = {
        [this] { at::mm(a_, b_); },
        [this] { at::addmm(b_, a_, b_); },
        [this] { at::bmm(a_.unsqueeze(0), b_.unsqueeze(0)); },
        [this] { at::conv2d(img_, k_); },
        [this] { at::max_pool2d(img_, {2, 2}); },
        [this] { at::avg_pool2d(img_, {2, 2}); },
        [this] { at::upsample_nearest2d(img_, {16, 16}); },
        [this] { at::batch_norm(img_, ch_, ch_, mean_, var_, true, 0.1, 1e-5, false); },
        [this] { at::layer_norm(a_, {16}); },
        [this] { at::sum(a_, 0); },
        [this] { at::mean(a_); },
        [this] { at::var(a_, 1); },
        [this] { at::norm(a_); },
        [this] { at::prod(a_, 1); },
        [this] { at::amax(a_, 1); },
        [this] { at::max(a_, 1); },
        [this] { at::argmax(a_, 1); },
        [this] { at::softmax(a_, 1); },
        [this] { at::log_softmax(a_, 1); },
        [this] { at::nll_loss(log_probs_, idx_.repeat({2})); },
        [this] { at::mse_loss(a_, b_); },
        [this] { at::binary_cross_entropy(probs_, b_); },
        [this] { at::cumsum(a_, 1); },
        [this] { at::sort(a_, 1); },
        [this] { at::topk(v_, 4); },
        [this] { at::index_select(a_, 0, idx_); },
        [this] { at::embedding(a_, idx_); },
        [this] { at::gather(a_, 1, gather_idx_); },
        [this] { at::where(mask_, a_, b_); },
        [this] { a_.masked_fill(mask_, 0); },
        [this] { at::cat({a_, b_}); },
        [this] { at::flip(a_, {0}); },
        [this] { at::tril(a_); },
        [this] { a_.clone(); },
        [this] { at::add(a_, b_); },
        [this] { at::mul(a_, b_); },
        [this] { at::div(a_, b_); },
        [this] { at::eq(a_, b_); },
        [this] { at::maximum(a_, b_); },
        [this] { at::exp(a_); },
        [this] { at::log(a_); },
        [this] { at::sqrt(a_); },
        [this] { at::pow(a_, 2); },
        [this] { at::clamp(a_, 0.2, 0.8); },
        [this] { at::abs(a_); },
        [this] { at::floor(a_); },
        [this] { at::sin(a_); },
        [this] { at::erf(a_); },
        [this] { at::tanh(a_); },
        [this] { at::sigmoid(a_); },
        [this] { at::relu(a_); },
        [this] { at::gelu(a_); },
        [this] { at::silu(a_); },
        [this] { at::hardswish(a_); },
        [this] { at::leaky_relu(a_); },
        [this] { at::elu(a_); },
    };
  }
  size_t size() const { return ops_.size(); }
  void call(size_t i) const { ops_[i % ops_.size()](); }

 private:
  at::Tensor a_, b_, v_, img_, k_, idx_, gather_idx_, mask_, log_probs_, probs_, ch_, mean_, var_;
  std::vector<std::function<void()>> ops_;
};

void measureColdKinds(const ProfileOptions& o, HwProfile& hw) {
  const KindRotation rot;
  const size_t n = rot.size();
  // The probes: a dozen of the rotation's kinds, spread over its families.
  const std::vector<size_t> probes = {0, 3, 4, 8, 9, 17, 22, 25, 28, 30, 34, 51};
  const std::vector<int> counts = o.quick ? std::vector<int>{1, 4, 16, 48}
                                          : std::vector<int>{1, 2, 4, 8, 16, 32, 48};
  const int samples = o.quick ? 9 : 21;
  for (size_t i = 0; i < n; ++i) rot.call(i);
  std::vector<double> hot(probes.size());
  for (size_t p = 0; p < probes.size(); ++p) {
    hot[p] = medianCallUs([&] { rot.call(probes[p]); }, o.quick);
  }
  double extra = 0;
  for (const int kinds : counts) {
    std::vector<double> extras;
    for (size_t p = 0; p < probes.size(); ++p) {
      const std::vector<double> cold = guardedSamples([&] {
        std::vector<double> s;
        for (int r = 0; r < samples; ++r) {
          // The `kinds` kinds after the probe's in the rotation, then the probe.
          for (int j = 1; j <= kinds; ++j) rot.call(probes[p] + static_cast<size_t>(j));
          const double t0 = replay::nowUs();
          rot.call(probes[p]);
          s.push_back(replay::nowUs() - t0);
        }
        return s;
      });
      extras.push_back(medianOf(cold) - hot[p]);
    }
    // More kinds in between cannot leave more of a kind's code in the caches.
    extra = std::max(extra, medianOf(extras));
    hw.cold_kinds.push_back({static_cast<double>(kinds), extra});
  }
  if (o.progress) {
    o.progress("cold kinds: +" + std::to_string(hw.cold_kinds.front().us) + " us after " +
               std::to_string(counts.front()) + " other kind(s), +" +
               std::to_string(hw.cold_kinds.back().us) + " after " + std::to_string(counts.back()));
  }
}

void measureReplayStep(const ProfileOptions& o, HwProfile& hw) {
  if (!onGpu(o)) {
    const ChainCost c = chainCost(kKinds, o);
    const double step = c.replay_us - c.hot_us;
    // Half the mixed chain's ops are views: a view's replayed cost over its
    // hot call is twice the chain's per op less the kernels' own, and what
    // it pays beyond the step is its cold call.
    const ChainCost m = chainCost(kKernelsAndViews, o);
    const double view_over_hot = 2 * (m.replay_us - m.hot_us) - step;
    // Each a round (HwProfile::rounds): a difference of two sub-microsecond
    // figures moves with the host.
    hw.replay_step_us = std::max(0.0, addRound(hw, "replay_step_us", step));
    hw.call_cold_view_us =
        std::max(0.0, addRound(hw, "call_cold_view_us", view_over_hot - std::max(0.0, step)));
    if (o.progress) {
      o.progress("replay step: " + std::to_string(hw.replay_step_us) + " us per op, a view's cold call " +
                 std::to_string(hw.call_cold_view_us) + " us");
    }
    return;
  }
  // On a GPU a call in a replay costs its hot-loop launch times a scale,
  // plus a step: two chains, kernels and views, give both (a view's call
  // launches nothing, so it fixes the step). On an H100 the hot loops'
  // launches summed to 0.6-0.8 of the host time the same ops took in
  // replays of recorded steps, and a step of one cost fitted neither views
  // nor GEMMs.
  const ChainCost k = chainCost(kGpuKinds, o), v = chainCost(kViews, o);
  const double scale = k.hot_us > v.hot_us ? (k.replay_us - v.replay_us) / (k.hot_us - v.hot_us) : 1;
  hw.launch_scale = std::clamp(scale, 1.0, 4.0);
  hw.replay_step_us = std::max(0.0, v.replay_us - v.hot_us * hw.launch_scale);
  if (o.progress) {
    o.progress("replay: launches x" + std::to_string(hw.launch_scale) + " + " +
               std::to_string(hw.replay_step_us) + " us per op");
  }
}
}  // namespace detail

}  // namespace etb::predict
