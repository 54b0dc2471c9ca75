// SPDX-License-Identifier: MIT
#include "predictor/timing.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>

#include "replayer/timer.h"

namespace etb::predict {
namespace {
struct StallTally {
  double total_us = 0, median_us = 0;
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

namespace {
double callUs(const std::function<void()>& fn) {
  const double t0 = replay::nowUs();
  fn();
  return replay::nowUs() - t0;
}
}  // namespace

double medianCallUs(const std::function<void()>& fn, bool quick, double long_call_us) {
  const bool long_call = callUs(fn) >= long_call_us;
  if (!long_call) fn();
  const size_t min_samples = long_call ? 3 : 5;
  const double budget_us = quick ? 4e3 : 25e3;
  std::vector<double> samples;
  const double start = replay::nowUs();
  while (samples.size() < min_samples ||
         (replay::nowUs() - start < budget_us && samples.size() < 2000)) {
    samples.push_back(callUs(fn));
  }
  double total = 0;
  for (const double s : samples) total += s;
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  const double median = samples[samples.size() / 2];
  tally().total_us += total;
  tally().median_us += median * static_cast<double>(samples.size());
  return median;
}

double coldCallUs(const std::function<void()>& fn, const std::function<void()>& flush,
                  bool quick, double long_call_us) {
  const bool long_call = callUs(fn) >= long_call_us;
  std::vector<double> samples;
  for (int i = 0; i < (long_call ? 3 : quick ? 5 : 15); ++i) {
    flush();
    samples.push_back(callUs(fn));
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

double timeOp(const char* name, const char* overload, const std::vector<c10::IValue>& args,
              bool quick) {
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  std::vector<c10::IValue> stack;
  return medianCallUs([&] {
    stack = args;
    op.callBoxed(stack);
  }, quick);
}

}  // namespace etb::predict
