// SPDX-License-Identifier: MIT
#include "replayer/host_time.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/profiler/execution_graph_observer.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/base/error.h"
#include "core/base/log.h"
#include "replayer/timer.h"

namespace etb::replay {
namespace {
namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

double medianOf(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

// CPU time of this thread: unlike wall time it does not grow while the
// thread waits for a core, so a busy neighbour or a throttled VM does not
// count as instrumentation (or as host time, in spinFor).
double threadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double timeBurst(const at::Tensor& a, const at::Tensor& b, int ops) {
  const double t0 = threadCpuUs();
  for (int i = 0; i < ops; ++i) at::add(a, b);
  return threadCpuUs() - t0;
}

struct Instrumented {
  double cpu_us = 0;
  uint64_t events = 0;
  double gap_us = 0;  // median between consecutive top-level events
};

// The median distance from one event's end to the next one's start: the
// part of the instrumentation that a profiler file shows between two ops
// (the median, so that a preempted moment does not count).
double medianGap(const std::vector<prof::KinetoEvent>& events) {
  std::vector<std::pair<double, double>> spans;
  for (const prof::KinetoEvent& e : events) {
    spans.emplace_back(static_cast<double>(e.startUs()),
                       static_cast<double>(e.startUs() + e.durationUs()));
  }
  std::sort(spans.begin(), spans.end());
  std::vector<double> gaps;
  for (size_t i = 1; i < spans.size(); ++i) gaps.push_back(spans[i].first - spans[i - 1].second);
  return medianOf(gaps);
}

// The burst with what the recorder had on: the ET observer writing to a
// scratch file and the CPU profiler recording shapes.
Instrumented instrumentedBurst(const at::Tensor& a, const at::Tensor& b, int ops) {
  std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                     "/etb_host_cost.XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) ETB_RUNTIME_ERROR("host-time calibration: cannot create a scratch file in ", path);
  close(fd);
  impl::addExecutionGraphObserver(path);
  impl::enableExecutionGraphObserver();
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO, /*report_input_shapes=*/true);
  const std::set<impl::ActivityType> cpu{impl::ActivityType::CPU};
  prof::prepareProfiler(config, cpu);
  prof::enableProfiler(config, cpu);
  Instrumented out;
  out.cpu_us = timeBurst(a, b, ops);
  std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
  impl::disableExecutionGraphObserver();
  impl::removeExecutionGraphObserver();
  unlink(path.c_str());
  out.events = result ? result->events().size() : 0;
  if (result) out.gap_us = medianGap(result->events());
  return out;
}
}  // namespace

ProfilerCost measureProfilerCost(int ops, int rounds) {
  const at::Tensor a = at::ones({64});
  const at::Tensor b = at::ones({64});
  timeBurst(a, b, ops);
  instrumentedBurst(a, b, std::max(ops / 10, 1));  // first-use costs (file, thread state)
  std::vector<double> per_event, per_gap;
  uint64_t events = 0;
  for (int r = 0; r < rounds; ++r) {
    const double plain = timeBurst(a, b, ops);
    const Instrumented on = instrumentedBurst(a, b, ops);
    if (on.events == 0) continue;
    events = on.events;
    per_event.push_back(std::max(0.0, (on.cpu_us - plain) / static_cast<double>(on.events)));
    per_gap.push_back(on.gap_us);
  }
  if (per_event.empty()) {
    ETB_RUNTIME_ERROR("host-time calibration: the profiler recorded no events in this libtorch");
  }
  ProfilerCost cost;
  cost.per_event_us = medianOf(per_event);
  cost.per_gap_us = std::clamp(medianOf(per_gap), 0.0, cost.per_event_us);
  cost.events = events;
  ETB_LOG(kInfo) << "instrumentation cost here: " << cost.per_event_us << " us per event, "
                 << cost.per_gap_us << " us of it between ops (" << events << " events x "
                 << rounds << " rounds)";
  return cost;
}

void spinFor(double us) {
  if (us <= 0) return;
  const double until = threadCpuUs() + us;
  while (threadCpuUs() < until) {
  }
}

namespace {
// A stretch of the main thread between two top-level ops; `slot` is the
// index of the op that follows it (selected.size() for the tail).
struct Gap {
  double lo = 0, hi = 0;
  size_t slot = 0;
  std::vector<double> boundaries;  // instrumented event starts/ends inside
};

void requireTiming(const trace::Trace& trace, const trace::Iteration& it) {
  if (it.start_us < 0 || it.dur_us <= 0) {
    ETB_INPUT_ERROR(SourceLoc{trace.path}, "host-time emulation needs the profiler file of the "
                    "same run (--kineto): ", it.name.empty() ? "the iteration" : it.name,
                    " has no profiled start and duration");
  }
}

std::vector<Gap> gapsOnThread(const trace::Trace& trace, const trace::Iteration& it,
                              const std::vector<SelectedNode>& selected, uint64_t tid,
                              HostGaps& out) {
  std::vector<Gap> gaps;
  double cursor = it.start_us;
  for (size_t k = 0; k < selected.size(); ++k) {
    const trace::Node& n = trace.nodes[selected[k].index];
    if (n.start_us < 0 || n.dur_us < 0) {
      ++out.untimed;
      continue;
    }
    if (tid != 0 && n.tid != tid) continue;
    if (n.start_us > cursor) gaps.push_back({cursor, n.start_us, k, {}});
    cursor = std::max(cursor, n.start_us + n.dur_us);
  }
  const double end = it.start_us + it.dur_us;
  if (end > cursor) gaps.push_back({cursor, end, selected.size(), {}});
  return gaps;
}

// Every start and end of an instrumented event (other than the top-level ops
// and the marker) that lies inside a gap costs half an event there.
void countBoundaries(const trace::Trace& trace, const trace::Iteration& it,
                     const std::vector<char>& is_selected, uint64_t tid, std::vector<Gap>& gaps) {
  auto bump = [&](double t) {
    auto g = std::upper_bound(gaps.begin(), gaps.end(), t,
                              [](double x, const Gap& gap) { return x < gap.lo; });
    if (g == gaps.begin()) return;
    --g;
    if (t > g->lo && t < g->hi) g->boundaries.push_back(t);
  };
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const trace::Node& n = trace.nodes[i];
    if (is_selected[i] || n.id == it.marker || n.id < it.begin || n.id >= it.end) continue;
    if (n.start_us < 0 || n.dur_us < 0 || n.kind == trace::NodeKind::kKernel) continue;
    if (tid != 0 && n.tid != tid) continue;
    bump(n.start_us);
    bump(n.start_us + n.dur_us);
  }
}
// Stretches of a gap with no event at all that are longer than `stall_us`:
// the recording process was not running (preempted, a throttled VM, a flush
// of the observer's file). They are dropped whole: keeping `stall_us` of
// each would add that much per stall, which on a busy machine is most of it.
double stalledUs(Gap& g, double stall_us, uint64_t& stalls) {
  std::sort(g.boundaries.begin(), g.boundaries.end());
  double dropped = 0, prev = g.lo;
  g.boundaries.push_back(g.hi);
  for (double t : g.boundaries) {
    if (t - prev > stall_us) {
      dropped += t - prev;
      ++stalls;
    }
    prev = t;
  }
  g.boundaries.pop_back();
  return dropped;
}
}  // namespace

HostGaps originalHostGaps(const trace::Trace& trace, const trace::Iteration& it,
                          const std::vector<SelectedNode>& selected, const ProfilerCost& cost,
                          double stall_us) {
  requireTiming(trace, it);
  const trace::Node* marker = trace.find(it.marker);
  const uint64_t tid = marker != nullptr ? marker->tid : 0;
  HostGaps out;
  out.before_us.assign(selected.size(), 0.0);
  std::vector<Gap> gaps = gapsOnThread(trace, it, selected, tid, out);
  std::vector<char> is_selected(trace.nodes.size(), 0);
  for (const SelectedNode& s : selected) is_selected[s.index] = 1;
  countBoundaries(trace, it, is_selected, tid, gaps);
  for (Gap& g : gaps) {
    const double raw = g.hi - g.lo;
    const double stalled = stall_us > 0 ? stalledUs(g, stall_us, out.stalls) : 0;
    const double instrumentation =
        cost.per_gap_us + 0.5 * cost.per_event_us * static_cast<double>(g.boundaries.size());
    const double host = std::max(0.0, raw - stalled - instrumentation);
    out.recorded_us += raw;
    out.stalled_us += stalled;
    out.emulated_us += host;
    out.boundaries += g.boundaries.size();
    if (host > 0) ++out.gaps;
    (g.slot < selected.size() ? out.before_us[g.slot] : out.after_us) = host;
  }
  return out;
}

}  // namespace etb::replay
