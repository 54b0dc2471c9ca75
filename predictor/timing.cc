// SPDX-License-Identifier: MIT
#include "predictor/timing.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "replayer/host_probe.h"
#include "replayer/timer.h"

namespace etb::predict {
namespace {
struct StallTally {
  double total_us = 0, median_us = 0;
  // The same by the loop's median call, in the bins of kStallBinsUs.
  std::array<double, kStallBinsUs.size()> bin_total_us{}, bin_median_us{};
};
// One profile per process: the tools time on one thread.
StallTally& tally() {
  static StallTally t;
  return t;
}
}  // namespace

void resetStallTally() { tally() = {}; }

double stallShare() {
  const StallTally& t = tally();
  return t.total_us > 0 ? std::max(0.0, 1 - t.median_us / t.total_us) : 0;
}

std::vector<StallBin> stallShareByCall() {
  const StallTally& t = tally();
  std::vector<StallBin> out;
  for (size_t b = 0; b < kStallBinsUs.size(); ++b) {
    if (t.bin_total_us[b] <= 0) continue;
    out.push_back({kStallBinsUs[b], std::max(0.0, 1 - t.bin_median_us[b] / t.bin_total_us[b]),
                   t.bin_total_us[b]});
  }
  return out;
}

namespace {
double callUs(const std::function<void()>& fn) {
  const double t0 = replay::nowUs();
  fn();
  return replay::nowUs() - t0;
}

// Adds a timed loop's calls to the stall tally; returns their median.
double tallied(const std::vector<double>& samples) {
  const double median = medianOf(samples);
  double total = 0;
  for (const double s : samples) total += s;
  tally().total_us += total;
  tally().median_us += median * static_cast<double>(samples.size());
  const size_t bin = static_cast<size_t>(
      std::lower_bound(kStallBinsUs.begin(), kStallBinsUs.end() - 1, median) - kStallBinsUs.begin());
  tally().bin_total_us[bin] += total;
  tally().bin_median_us[bin] += median * static_cast<double>(samples.size());
  return median;
}

// A round of launches of other kinds of ops than the one being timed, each
// down a code path of its own (cuBLAS, reductions, softmax, a loss, a
// convolution, indexing, sorting, concatenation), on small tensors: what a
// replay runs between two calls of one kind.
class OtherKinds {
 public:
  explicit OtherKinds(const at::Device& d) {
    const at::TensorOptions f = at::TensorOptions().device(d);
    a_ = at::rand({16, 16}, f);
    b_ = at::rand({16, 16}, f);
    img_ = at::rand({1, 4, 8, 8}, f);
    k_ = at::rand({4, 4, 3, 3}, f);
    idx_ = at::randint(0, 16, {8}, f.dtype(at::kLong));
    mask_ = a_ > 0.5;
  }
  void run() const {
    at::mm(a_, b_);
    at::addmm(b_, a_, b_);
    at::sum(a_, 0);
    at::softmax(a_, 1);
    at::nll_loss(at::log_softmax(a_, 1), idx_.narrow(0, 0, 8).repeat({2}));
    at::conv2d(img_, k_);
    at::max_pool2d(img_, {2, 2});
    at::layer_norm(a_, {16});
    at::index_select(a_, 0, idx_);
    at::embedding(a_, idx_);
    at::where(mask_, a_, b_);
    at::cumsum(a_, 1);
    at::sort(a_, 1);
    at::cat({a_, b_});
    at::mean(a_);
    a_.clone();
  }

 private:
  at::Tensor a_, b_, img_, k_, idx_, mask_;
};

struct DeviceClock {
  std::string device;  // "" = host timing
  std::map<std::string, std::vector<double>> host_us;  // per call, by name
  std::map<std::string, double> first_ratio;           // by name, its first timing's
  std::vector<double> sync_latency_us;                 // per timed op
  std::set<std::string> synchronising;                 // ops that wait for the device
  std::unique_ptr<OtherKinds> others;
};
DeviceClock& deviceClock() {
  static DeviceClock c;
  return c;
}

// Host timing: each short op's call after a round of other kinds less its
// hot call, by name (callColdUs).
struct HostCold {
  bool probing = false;  // between resetCallCold() and callColdUs()
  std::map<std::string, double> extra_us;
  std::unique_ptr<OtherKinds> others;
};
HostCold& hostCold() {
  static HostCold c;
  return c;
}
// Calls longer than this are not probed: a microsecond or two of cold code
// is lost in their own variation.
constexpr double kColdProbeMaxUs = 200;

// The host launches a batch in at most this long: far inside the gate's
// 50 ms limit (timer.cc), and long enough that the two events around the
// batch (a few microseconds) are a small part of it.
constexpr double kBatchHostUs = 5000;

// medianCallUs on the device (DeviceClockScope). A call that waits for the
// device itself (a copy to the host) opens the gate on its time limit: such
// an op is timed on the host, synchronised, instead.
double deviceMedianCallUs(const std::function<void()>& fn, bool quick, const std::string& name) {
  // A sync of its own: one whose gate once timed out stays ungated.
  const std::unique_ptr<replay::DeviceSync> own = replay::makeDeviceSync(deviceClock().device);
  replay::DeviceSync& sync = *own;
  fn();
  fn();
  sync.synchronize();
  const double host1 = callUs(fn);
  sync.synchronize();
  const double synced1 = callUs([&] {
    fn();
    sync.synchronize();
  });
  // Launches and kernels of a batch each within kBatchHostUs: a 3 ms GEMM
  // is timed a call at a time, a 5 us add 64 at once.
  const double longest = std::max({host1, synced1, 1.0});
  const int batch = static_cast<int>(std::clamp(kBatchHostUs / longest, 1.0, 64.0));
  const double budget_us = quick ? 4e3 : 25e3;
  std::vector<double> device, host;
  bool synchronising = false;
  const double start = replay::nowUs();
  while (device.size() < 5 || (replay::nowUs() - start < budget_us && device.size() < 200)) {
    sync.beginTiming(1);
    sync.beforeCall(0);
    for (int i = 0; i < batch; ++i) fn();
    sync.afterCall(0);
    sync.synchronize();
    const replay::StepDeviceTimes t = sync.endTiming();
    if (!t.host_synced.empty() && t.host_synced[0]) {
      synchronising = true;
      // Synchronising op: its time is the host's, device included.
      const double t1 = replay::nowUs();
      fn();
      sync.synchronize();
      device.push_back(replay::nowUs() - t1);
      continue;
    }
    device.push_back(t.us.empty() ? 0 : t.us[0] / batch);
  }
  // The launch as a replay meets it: the stream running, not held. Calls
  // launched into a held stream took 55-65% of the host time the same ops
  // took in a replay on an H100 (mm 13.6 against 24-35 us).
  for (int i = 0; i < std::max(batch, 8); ++i) host.push_back(callUs(fn));
  sync.synchronize();
  if (!name.empty()) deviceClock().host_us[name].push_back(medianOf(host));
  // The launch after a round of other kinds, once per name (its first
  // shape), waiting for the device between rounds so that no queue fills.
  DeviceClock& clock = deviceClock();
  if (!name.empty() && !synchronising && clock.others && !clock.first_ratio.count(name)) {
    const double first = coldCallUs(fn, [&] {
      sync.synchronize();
      clock.others->run();
    }, quick);
    sync.synchronize();
    clock.first_ratio[name] = first / std::max(medianOf(host), 1e-3);
  }
  const double median = tallied(device);
  // One call on an idle device, launched and waited for: the launch, the
  // kernel, and the latency between (not for ops that wait themselves).
  if (!synchronising) deviceClock().sync_latency_us.push_back(std::max(0.0, synced1 - host1 - median));
  if (synchronising && !name.empty()) deviceClock().synchronising.insert(name);
  return median;
}
}  // namespace

DeviceClockScope::DeviceClockScope(const std::string& device) {
  deviceClock().device = device;
  deviceClock().host_us.clear();
  deviceClock().first_ratio.clear();
  deviceClock().sync_latency_us.clear();
  deviceClock().synchronising.clear();
  deviceClock().others = std::make_unique<OtherKinds>(at::Device(device));
}

double launchFirstScale() {
  std::vector<double> ratios;
  for (const auto& [name, r] : deviceClock().first_ratio) ratios.push_back(r);
  return ratios.empty() ? 0 : medianOf(ratios);
}

std::vector<std::string> synchronisingOps() {
  const std::set<std::string>& s = deviceClock().synchronising;
  return {s.begin(), s.end()};
}

double syncLatencyUs() {
  const std::vector<double>& l = deviceClock().sync_latency_us;
  return l.empty() ? 0 : medianOf(l);
}

DeviceClockScope::~DeviceClockScope() {
  deviceClock().device.clear();
  deviceClock().others.reset();
}

std::map<std::string, double> launchHostUs() {
  std::map<std::string, double> out;
  for (const auto& [name, us] : deviceClock().host_us) out[name] = medianOf(us);
  return out;
}

namespace {
using replay::bestOfTwoUs;

class SpeedGuard {
 public:
  SpeedGuard(double retry_budget, std::function<void()> reference) : budget_(retry_budget) {
    reference_ = reference ? std::move(reference) : replay::guardReference();
    // The fastest probe over a third of a second, probes 5 ms apart: a
    // disturbed spell rarely covers all of it, and later probes lower it.
    const double until = replay::nowUs() + 3e5;
    while (replay::nowUs() < until) {
      probe();
      const double next = replay::nowUs() + 5e3;
      while (replay::nowUs() < next) {
      }
    }
  }
  std::vector<double> run(const std::function<std::vector<double>()>& measure) {
    if (busy_) return measure();
    busy_ = true;
    struct Done {
      bool& busy;
      ~Done() { busy = false; }
    } done{busy_};  // a measurement that throws ends the try too
    std::vector<double> kept;
    double kept_ratio = 0, kept_speed = 1;
    for (int attempt = 0; attempt <= kGuardRetries; ++attempt) {
      const double t0 = replay::nowUs();
      try_slowest_ = try_sum_ = 0;
      try_probes_ = 0;
      const double before = probe();
      std::vector<double> s = measure();
      const double after = probe(), ratio = try_slowest_ / fastest_;
      if (attempt == 0) {
        first_probes_.push_back(before);
        first_probes_.push_back(after);
      }
      if (attempt == 0 || ratio < kept_ratio) {
        kept = std::move(s);
        kept_ratio = ratio;
        kept_speed = try_sum_ / try_probes_ / fastest_;
      }
      (attempt == 0 ? first_us_ : retry_us_) += replay::nowUs() - t0;
      if (kept_ratio <= kDisturbedRatio || retry_us_ > budget_ * first_us_ + kGuardAllowanceUs) break;
      if (attempt == 0) ++retried_;
      // A spell lasts from a tenth of a second to seconds: each try waits
      // twice as long as the one before for it to end.
      const double t1 = replay::nowUs(), until = t1 + kGuardPauseUs * (1 << attempt);
      while (replay::nowUs() < until) {
      }
      retry_us_ += replay::nowUs() - t1;
    }
    ++measurements_;
    if (kept_ratio > kDisturbedRatio) ++kept_disturbed_;
    // The kept try ran at its probes' mean speed: its samples are brought to
    // the fastest probe's, as the curves are (the predictor scales them to
    // the typical speed, `slowdown`). A machine slowed through every try
    // otherwise had its slowdown counted twice: on a VM whose probes ran
    // 1.5x their fastest through 92% of the measurements, the curves held
    // it and et_predict multiplied it in again (mlp +50%, resnet18 +85%).
    const double scale = std::max(1.0, kept_speed);
    kept_speeds_.push_back(scale);
    if (scale > 1) {
      for (double& x : kept) x /= scale;
    }
    return kept;
  }
  // A probe between a try's samples: a spell in the middle of a long
  // measurement slows the try too.
  void checkpoint() {
    if (busy_) probe();
  }
  SpeedGuardStats stats() const {
    SpeedGuardStats s;
    s.measurements = measurements_;
    s.probe_us = fastest_;
    if (measurements_ > 0) {
      s.retried_share = static_cast<double>(retried_) / measurements_;
      s.kept_disturbed_share = static_cast<double>(kept_disturbed_) / measurements_;
    }
    if (!first_probes_.empty()) {
      double sum = 0;
      for (const double p : first_probes_) sum += p;
      s.mean_slowdown = sum / static_cast<double>(first_probes_.size()) / fastest_;
      s.slowdown = medianOf(first_probes_) / fastest_;
    }
    if (!kept_speeds_.empty()) s.kept_slowdown = medianOf(kept_speeds_);
    s.retry_s = retry_us_ * 1e-6;
    return s;
  }

 private:
  double probe() {
    const double best = bestOfTwoUs(reference_);
    if (fastest_ == 0 || best < fastest_) fastest_ = best;
    try_slowest_ = std::max(try_slowest_, best);
    try_sum_ += best;
    ++try_probes_;
    return best;
  }

  std::function<void()> reference_;
  const double budget_;
  double fastest_ = 0, try_slowest_ = 0, try_sum_ = 0, first_us_ = 0, retry_us_ = 0;
  int try_probes_ = 0;
  std::vector<double> first_probes_;  // the first tries' probes, microseconds
  std::vector<double> kept_speeds_;   // each kept try's mean probe over the fastest, at least 1
  int measurements_ = 0, retried_ = 0, kept_disturbed_ = 0;
  bool busy_ = false;
};
std::unique_ptr<SpeedGuard>& speedGuard() {
  static std::unique_ptr<SpeedGuard> g;
  return g;
}
}  // namespace

SpeedGuardScope::SpeedGuardScope(double retry_budget, std::function<void()> reference) {
  speedGuard() = std::make_unique<SpeedGuard>(retry_budget, std::move(reference));
}
SpeedGuardScope::~SpeedGuardScope() { speedGuard().reset(); }

double medianProbeUs(double seconds) {
  const std::function<void()> reference = replay::guardReference();
  reference();  // the first call finds its code and data out of the caches
  std::vector<double> probes;
  const double until = replay::nowUs() + seconds * 1e6;
  do {
    probes.push_back(bestOfTwoUs(reference));
    const double next = replay::nowUs() + 5e3;
    while (replay::nowUs() < next) {
    }
  } while (replay::nowUs() < until);
  return medianOf(probes);
}

SpeedGuardStats speedGuardStats() { return speedGuard() ? speedGuard()->stats() : SpeedGuardStats{}; }

namespace {
int& unguardedDepth() {
  static int depth = 0;
  return depth;
}
}  // namespace

UnguardedScope::UnguardedScope() { ++unguardedDepth(); }
UnguardedScope::~UnguardedScope() { --unguardedDepth(); }

std::vector<double> guardedSamples(const std::function<std::vector<double>()>& measure) {
  return speedGuard() && unguardedDepth() == 0 ? speedGuard()->run(measure) : measure();
}

void speedGuardCheckpoint() {
  if (speedGuard() && unguardedDepth() == 0) speedGuard()->checkpoint();
}

double medianCallUs(const std::function<void()>& fn, bool quick, double long_call_us,
                    const std::string& name) {
  if (!deviceClock().device.empty()) return deviceMedianCallUs(fn, quick, name);
  const std::vector<double> samples = guardedSamples([&] {
    const double first = callUs(fn);
    const bool long_call = first >= longCallUs(quick, long_call_us);
    if (!long_call) fn();
    const size_t min_samples = long_call ? 3 : 5;
    const double budget_us = quick ? 4e3 : 25e3;
    std::vector<double> s;
    const double start = replay::nowUs();
    while (s.size() < min_samples || (replay::nowUs() - start < budget_us && s.size() < 2000)) {
      if (first >= kCheckpointCallUs) speedGuardCheckpoint();
      s.push_back(callUs(fn));
    }
    return s;
  });
  const double median = tallied(samples);
  // A short call once more right after a round of other kinds, once per
  // name (its first size): what a replay's call costs beyond the hot loop's
  // when the op before it was another kind. Not in the stall tally.
  HostCold& hc = hostCold();
  if (hc.probing && !name.empty() && median < kColdProbeMaxUs && !hc.extra_us.count(name)) {
    if (!hc.others) hc.others = std::make_unique<OtherKinds>(at::Device(at::kCPU));
    hc.extra_us[name] = coldCallUs(fn, [&] { hc.others->run(); }, quick) - median;
  }
  return median;
}

double callColdUs() {
  std::vector<double> extra;
  for (const auto& [name, us] : hostCold().extra_us) extra.push_back(us);
  hostCold() = {};  // its tensors go before libtorch's statics do
  return extra.empty() ? 0 : std::max(0.0, medianOf(extra));
}

void resetCallCold() {
  hostCold() = {};
  hostCold().probing = true;
}

double coldCallUs(const std::function<void()>& fn, const std::function<void()>& flush,
                  bool quick, double long_call_us) {
  return medianOf(guardedSamples([&] {
    const bool long_call = callUs(fn) >= longCallUs(quick, long_call_us);
    std::vector<double> samples;
    for (int i = 0; i < (long_call ? 3 : coldCallSamples(quick)); ++i) {
      speedGuardCheckpoint();
      flush();
      samples.push_back(callUs(fn));
    }
    return samples;
  }));
}

double medianOf(std::vector<double> xs) {
  std::nth_element(xs.begin(), xs.begin() + static_cast<long>(xs.size() / 2), xs.end());
  return xs[xs.size() / 2];
}

double timeOp(const char* name, const char* overload, const std::vector<c10::IValue>& args,
              bool quick, const std::string& key) {
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  std::vector<c10::IValue> stack;
  return medianCallUs([&] {
    stack = args;
    op.callBoxed(stack);
  }, quick, kLongCallUs, key.empty() ? std::string(name) : key);
}

}  // namespace etb::predict
