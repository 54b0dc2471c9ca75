// SPDX-License-Identifier: MIT
#include "replayer/host_time.h"

#include <algorithm>
#include <utility>

#include "core/base/error.h"
#include "replayer/replay_result.h"
#include "replayer/timer.h"

namespace etb::replay {

double spinFor(double us, int* reads) {
  int n = 0;
  double now = 0, t0 = 0;
  if (us > 0) {
    t0 = now = threadCpuUs();
    while (now < t0 + us) {
      now = threadCpuUs();
      ++n;
    }
  }
  if (reads != nullptr) *reads = n;
  return now - t0;
}

double detail::nextReadCost(double estimate, double spent_us, int reads) {
  if (reads <= 0) return estimate;
  // A VM that reports no steal time counts a host preemption in the
  // thread's CPU time too: one spin of a few reads then "took" a
  // millisecond. Taken whole, that raised the estimate tenfold, the spins
  // after it were skipped as not worth a read, and 2000 spins of 2 us came
  // to 2623 us. Such a spin says nothing of a read's cost and is left out;
  // every other one counts in full (capping them biased the estimate low,
  // and each spin then overshot: 4410 us for the same 4000).
  const double per_read = spent_us / reads;
  if (estimate > 0 && per_read > kPreemptedReads * estimate) return estimate;
  return estimate + kReadCostWeight * (per_read - estimate);
}

HostSpinner::HostSpinner() {
  // In the thread's CPU time, as the spins count: a wall-clock measurement
  // took any preemption during these reads as their cost, and every later
  // spin then fell short by it. The median of batches, as the CPU time can
  // still hold a preemption the VM does not report (see nextReadCost).
  constexpr int kBatches = 9, kReads = 24;
  std::vector<double> per_read(kBatches);
  for (double& r : per_read) {
    const double t0 = threadCpuUs();
    for (int i = 0; i < kReads; ++i) threadCpuUs();
    r = (threadCpuUs() - t0) / (kReads + 1);
  }
  read_us_ = medianOf(std::move(per_read));
}

void HostSpinner::spin(double us) {
  const double want = us - debt_us_;
  if (want <= read_us_) {  // not worth a read: owed to the next spin
    debt_us_ = -want;
    return;
  }
  int reads = 0;
  const double spent = spinFor(want - read_us_, &reads);
  debt_us_ = spent + read_us_ - want;
  // A spin is nothing but reads of the clock, so it measures what one costs
  // now: the figure taken at construction goes stale when a sibling
  // hardware thread becomes busy (each read then costs more, and every spin
  // would overshoot by the difference, uncounted).
  read_us_ = detail::nextReadCost(read_us_, spent, reads);
}

std::vector<double> emulatedGaps(const std::vector<double>& original_us,
                                 const std::vector<double>& replay_us) {
  std::vector<double> out(original_us.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const double already = i < replay_us.size() ? replay_us[i] : 0.0;
    out[i] = std::max(0.0, original_us[i] - already);
  }
  return out;
}

namespace {
// A stretch of the main thread between two top-level ops; `slot` is the
// index of the op that follows it (selected.size() for the tail).
struct Gap {
  double lo = 0, hi = 0;
  size_t slot = 0;
  std::vector<double> boundaries;  // instrumented event starts/ends inside
  uint64_t label_boundaries = 0;   // of them, of label events
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
// and the marker) that lies inside a gap costs half an event there: half an
// operator's or half a label's cost, by the event's kind.
void countBoundaries(const trace::Trace& trace, const trace::Iteration& it,
                     const std::vector<char>& is_selected, uint64_t tid, std::vector<Gap>& gaps) {
  auto bump = [&](double t, bool label) {
    auto g = std::upper_bound(gaps.begin(), gaps.end(), t,
                              [](double x, const Gap& gap) { return x < gap.lo; });
    if (g == gaps.begin()) return;
    --g;
    if (t > g->lo && t < g->hi) {
      g->boundaries.push_back(t);
      g->label_boundaries += label ? 1 : 0;
    }
  };
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const trace::Node& n = trace.nodes[i];
    if (is_selected[i] || n.id == it.marker || n.id < it.begin || n.id >= it.end) continue;
    if (n.start_us < 0 || n.dur_us < 0 || n.kind == trace::NodeKind::kKernel) continue;
    if (tid != 0 && n.tid != tid) continue;
    const bool label = n.kind != trace::NodeKind::kOperator;
    bump(n.start_us, label);
    bump(n.start_us + n.dur_us, label);
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
    const double labels = static_cast<double>(g.label_boundaries);
    const double ops = static_cast<double>(g.boundaries.size()) - labels;
    const double instrumentation =
        cost.per_gap_us + 0.5 * (cost.per_event_us * ops + cost.per_label_us * labels);
    const double host = std::max(0.0, raw - stalled - instrumentation);
    out.recorded_us += raw;
    out.stalled_us += stalled;
    out.emulated_us += host;
    out.boundaries += g.boundaries.size();
    out.label_boundaries += g.label_boundaries;
    if (host > 0) ++out.gaps;
    (g.slot < selected.size() ? out.before_us[g.slot] : out.after_us) = host;
  }
  return out;
}

}  // namespace etb::replay
