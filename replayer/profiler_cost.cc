// SPDX-License-Identifier: MIT
#include "replayer/profiler_cost.h"
#include "replayer/replay_result.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
// libtorch 1.13 calls the ET observer the "execution graph" observer; 2.x
// renamed it "execution trace" and moved it under standalone/.
#if __has_include(<torch/csrc/profiler/standalone/execution_trace_observer.h>)
#include <torch/csrc/profiler/standalone/execution_trace_observer.h>
#define ETB_ET_OBSERVER(verb) verb##ExecutionTraceObserver
#else
#include <torch/csrc/profiler/execution_graph_observer.h>
#define ETB_ET_OBSERVER(verb) verb##ExecutionGraphObserver
#endif
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/base/error.h"
#include "core/base/log.h"

namespace etb::replay {
namespace {
namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// KinetoEvent's times: microseconds in 1.13 (startUs), nanoseconds in 2.x
// (startNs; startUs is gone). The int argument prefers the 2.x overload.
template <typename E>
auto startUs(const E& e, int) -> decltype(e.startNs(), double()) {
  return static_cast<double>(e.startNs()) / 1e3;
}
template <typename E>
double startUs(const E& e, long) {
  return static_cast<double>(e.startUs());
}
template <typename E>
auto durationUs(const E& e, int) -> decltype(e.durationNs(), double()) {
  return static_cast<double>(e.durationNs()) / 1e3;
}
template <typename E>
double durationUs(const E& e, long) {
  return static_cast<double>(e.durationUs());
}
}  // namespace

// A busy neighbour or a throttled VM does not count as instrumentation.
double threadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// What the recorder had on: the ET observer writing to a scratch file and
// the CPU profiler recording shapes.
InstrumentedRun runInstrumented(const std::function<void()>& body) {
  std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                     "/etb_host_cost.XXXXXX.json";
  // ".json": libtorch 2.x warns about an ET file named otherwise.
  const int fd = mkstemps(path.data(), 5);
  if (fd < 0) ETB_RUNTIME_ERROR("host-time calibration: cannot create a scratch file in ", path);
  close(fd);
  torch::profiler::impl::ETB_ET_OBSERVER(add)(path);
  torch::profiler::impl::ETB_ET_OBSERVER(enable)();
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO, /*report_input_shapes=*/true);
  const std::set<impl::ActivityType> cpu{impl::ActivityType::CPU};
  prof::prepareProfiler(config, cpu);
  prof::enableProfiler(config, cpu);
  InstrumentedRun out;
  const double t0 = threadCpuUs();
  body();
  out.cpu_us = threadCpuUs() - t0;
  std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
  torch::profiler::impl::ETB_ET_OBSERVER(disable)();
  torch::profiler::impl::ETB_ET_OBSERVER(remove)();
  unlink(path.c_str());
  if (!result) return out;
  for (const prof::KinetoEvent& e : result->events()) {
    out.events.push_back({e.name(), startUs(e, 0), durationUs(e, 0)});
    out.labels += out.events.back().name.rfind("aten::", 0) == 0 ? 0 : 1;
  }
  return out;
}

namespace {

// One burst body per event kind, `n` times.
using Body = void (*)(const at::Tensor& a, const at::Tensor& b, int n);

void opBody(const at::Tensor& a, const at::Tensor& b, int n) {
  for (int i = 0; i < n; ++i) at::add(a, b);
}

// The autograd engine as the recording had it: a chain of muls run
// backwards records, per function, an "evaluate_function" label with the
// backward node's label inside (the incoming gradient as its input), around
// the node's own ops.
void backwardBody(const at::Tensor& a, const at::Tensor& b, int n) {
  constexpr int kChain = 50;
  for (int done = 0; done < n; done += kChain) {
    at::Tensor x = a.detach().requires_grad_();
    at::Tensor y = x;
    for (int i = 0; i < kChain; ++i) y = y * b;
    y.sum().backward();
  }
}

double timeBurst(Body body, const at::Tensor& a, const at::Tensor& b, int n) {
  const double t0 = threadCpuUs();
  body(a, b, n);
  return threadCpuUs() - t0;
}

struct Instrumented {
  double cpu_us = 0;
  uint64_t events = 0;
  uint64_t labels = 0;  // events that are no aten operator
  double gap_us = 0;  // between consecutive events (op bursts only)
};

// The distance from one event's end to the next one's start: the part of
// the instrumentation that a profiler file shows between two ops.
double typicalGap(const std::vector<RecordedEvent>& events) {
  std::vector<std::pair<double, double>> spans;
  for (const RecordedEvent& e : events) spans.emplace_back(e.start_us, e.start_us + e.dur_us);
  std::sort(spans.begin(), spans.end());
  std::vector<double> gaps;
  for (size_t i = 1; i < spans.size(); ++i) gaps.push_back(spans[i].first - spans[i - 1].second);
  return detail::trimmedMean(std::move(gaps));
}

Instrumented instrumentedBurst(Body body, const at::Tensor& a, const at::Tensor& b, int n) {
  Instrumented out;
  const InstrumentedRun run = runInstrumented([&] { body(a, b, n); });
  out.cpu_us = run.cpu_us;
  out.events = run.events.size();
  out.labels = run.labels;
  out.gap_us = typicalGap(run.events);
  return out;
}

// Instrumented minus plain CPU time of one burst.
struct Round {
  double extra_us = 0;
  Instrumented on;
};

Round timeRound(Body body, const at::Tensor& a, const at::Tensor& b, int n) {
  const double plain = timeBurst(body, a, b, n);
  Round r;
  r.on = instrumentedBurst(body, a, b, n);
  r.extra_us = std::max(0.0, r.on.cpu_us - plain);
  return r;
}
}  // namespace

namespace detail {
double trimmedMean(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const size_t lo = xs.size() / 10, hi = xs.size() - xs.size() / 10;
  double sum = 0;
  for (size_t i = lo; i < hi; ++i) sum += xs[i];
  return sum / static_cast<double>(hi - lo);
}
}  // namespace detail

// Rounds alternate an operator burst and a backward burst, so both see the
// same machine; per round the operators' share of the backward burst's cost
// is taken out at that round's per-operator cost, and the rest split over
// its labels. Medians over rounds.
ProfilerCost measureProfilerCost(int ops, int rounds) {
  const at::Tensor a = at::ones({64});
  const at::Tensor b = at::ones({64});
  for (Body body : {opBody, backwardBody}) {  // first-use costs (file, thread state)
    timeBurst(body, a, b, ops / 10);
    instrumentedBurst(body, a, b, std::max(ops / 10, 1));
  }
  std::vector<double> per_op, per_label, gaps;
  uint64_t events = 0, labels = 0;
  for (int r = 0; r < rounds; ++r) {
    const Round op = timeRound(opBody, a, b, ops);
    const Round bw = timeRound(backwardBody, a, b, ops);
    if (op.on.events == 0 || bw.on.labels == 0) continue;
    events = op.on.events;
    labels = bw.on.labels;
    const double op_us = op.extra_us / static_cast<double>(op.on.events);
    const double bw_ops = static_cast<double>(bw.on.events - bw.on.labels);
    per_op.push_back(op_us);
    per_label.push_back(std::max(0.0, bw.extra_us - bw_ops * op_us) /
                        static_cast<double>(bw.on.labels));
    gaps.push_back(op.on.gap_us);
    ETB_LOG(kDebug) << "calibration round " << r << ": " << op_us << " us per op event, "
                    << per_label.back() << " us per label event, " << gaps.back()
                    << " us between ops";
  }
  if (per_op.empty()) {
    ETB_RUNTIME_ERROR("host-time calibration: the profiler recorded no events (or no autograd "
                      "labels) in this libtorch");
  }
  ProfilerCost cost;
  cost.per_event_us = medianOf(per_op);
  cost.per_label_us = medianOf(per_label);
  cost.per_gap_us = std::clamp(medianOf(gaps), 0.0, cost.per_event_us);
  cost.events = events;
  ETB_LOG(kInfo) << "instrumentation cost here: " << cost.per_event_us << " us per op event ("
                 << cost.per_gap_us << " us of it between ops), " << cost.per_label_us
                 << " us per label event (" << events << " op events, " << labels
                 << " labels in a backward burst, x " << rounds << " rounds)";
  return cost;
}

ProfilerCost withRecordingCost(const ProfilerCost& here, const RecordedInstrumentation& rec) {
  ProfilerCost out = here;
  const double gap_share = here.per_event_us > 0 ? here.per_gap_us / here.per_event_us : 0;
  out.per_event_us = rec.per_event_us;
  out.per_label_us = rec.per_label_us;
  out.per_gap_us = std::clamp(gap_share, 0.0, 1.0) * rec.per_event_us;
  return out;
}

}  // namespace etb::replay
