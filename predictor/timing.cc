// SPDX-License-Identifier: MIT
#include "predictor/timing.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>

#include "replayer/timer.h"

namespace etb::predict {

double medianCallUs(const std::function<void()>& fn, bool quick) {
  fn();
  fn();
  const double budget_us = quick ? 4e3 : 25e3;
  std::vector<double> samples;
  const double start = replay::nowUs();
  while (samples.size() < 5 || (replay::nowUs() - start < budget_us && samples.size() < 2000)) {
    const double t0 = replay::nowUs();
    fn();
    samples.push_back(replay::nowUs() - t0);
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

double coldCallUs(const std::function<void()>& fn, const std::function<void()>& flush,
                  bool quick) {
  fn();
  std::vector<double> samples;
  for (int i = 0; i < (quick ? 5 : 15); ++i) {
    flush();
    const double t0 = replay::nowUs();
    fn();
    samples.push_back(replay::nowUs() - t0);
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
