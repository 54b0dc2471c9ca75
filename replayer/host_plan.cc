// SPDX-License-Identifier: MIT
#include "replayer/host_plan.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <type_traits>
#include <numeric>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/log.h"
#include "replayer/fork_pages.h"

namespace etb::replay::detail {

std::vector<MatchedOp> matchEvents(const Plan& plan, const IterationRecord& rec,
                                   std::vector<RecordedEvent> events) {
  std::sort(events.begin(), events.end(), [](const RecordedEvent& a, const RecordedEvent& b) {
    return a.start_us != b.start_us ? a.start_us < b.start_us : a.dur_us > b.dur_us;
  });
  std::vector<MatchedOp> out;
  size_t cursor = 0;
  double free_from = -1e300;
  for (size_t i = 0; i < plan.steps.size() && cursor < events.size(); ++i) {
    if (rec.call_us[i] < 0) continue;
    size_t k = cursor;
    while (k < events.size() &&
           (events[k].start_us < free_from || events[k].name != plan.steps[i].name)) {
      ++k;
    }
    if (k == events.size()) break;
    free_from = events[k].start_us + events[k].dur_us;
    uint32_t nested = 0;
    for (size_t j = k + 1; j < events.size() && events[j].start_us < free_from; ++j) ++nested;
    out.push_back({i, events[k].dur_us, 1 + nested});
    cursor = k + 1;
  }
  return out;
}

size_t outsideSpans(const Plan& plan, const IterationRecord& rec,
                    std::vector<RecordedEvent> events, std::vector<double>& outside) {
  const std::vector<MatchedOp> matched = matchEvents(plan, rec, std::move(events));
  for (const MatchedOp& m : matched) outside.push_back(std::max(0.0, rec.call_us[m.step] - m.dur_us));
  return matched.size();
}

double lightOpCost(const IterationRecord& off, const IterationRecord& on,
                   const std::vector<MatchedOp>& matched, double light_us) {
  double extra = 0, events = 0;
  for (const MatchedOp& m : matched) {
    const double plain = m.step < off.call_us.size() ? off.call_us[m.step] : -1;
    if (plain < 0 || plain > light_us) continue;
    extra += on.call_us[m.step] - plain;
    events += m.events;
  }
  return events >= kMinLightEvents ? std::max(0.0, extra) / events : -1;
}

ProfilerCost calibrateOnReplay(Executor& exec, const Plan& plan, const ProfilerCost& hot,
                               std::vector<IterationRecord>& plain, int rounds) {
  std::vector<double> per_event, outside;
  size_t called = 0, matched = 0;
  for (int r = 0; r < rounds; ++r) {
    const double c0 = threadCpuUs();
    plain.push_back(exec.runIteration(false, nullptr));
    const double off = threadCpuUs() - c0;
    IterationRecord rec;
    const InstrumentedRun on = runInstrumented([&] { rec = exec.runIteration(false, nullptr); });
    if (on.events.empty()) continue;
    called += static_cast<size_t>(std::count_if(rec.call_us.begin(), rec.call_us.end(),
                                                [](double c) { return c >= 0; }));
    const std::vector<MatchedOp> ops = matchEvents(plan, rec, on.events);
    matched += ops.size();
    for (const MatchedOp& m : ops) outside.push_back(std::max(0.0, rec.call_us[m.step] - m.dur_us));
    // Light calls where there are enough of them; the whole iteration's
    // difference otherwise (noisy where a few heavy kernels dominate).
    const double light = lightOpCost(plain.back(), rec, ops);
    per_event.push_back(light >= 0 ? light
                                   : std::max(0.0, on.cpu_us - off) /
                                         static_cast<double>(on.events.size()));
  }
  ProfilerCost cost = hot;
  cost.ops_called = called;
  cost.ops_matched = matched;
  if (per_event.empty()) return cost;
  cost.per_event_us = medianOf(per_event);
  if (hot.per_event_us > 0) cost.per_label_us = hot.per_label_us * cost.per_event_us / hot.per_event_us;
  // Only when (nearly) every op found its event: a partial match could be
  // the ops that are cheap to find.
  if (matched > 0 && 10 * matched >= 9 * called) {
    cost.per_gap_us = std::clamp(trimmedMean(outside), 0.0, cost.per_event_us);
  }
  ETB_LOG(kInfo) << "instrumentation cost on this trace's ops: " << cost.per_event_us
                 << " us per op event (" << cost.per_gap_us << " us of it outside its span; "
                 << matched << "/" << called << " ops matched to their events), "
                 << cost.per_label_us << " us per label event (start-up: " << hot.per_event_us
                 << ", " << hot.per_gap_us << ", " << hot.per_label_us << ")";
  return cost;
}

static_assert(std::is_trivially_copyable_v<ProfilerCost>, "sent through a pipe");

std::optional<ProfilerCost> calibrateInChild(Executor& exec, const Plan& plan,
                                             const ProfilerCost& hot) {
  struct Message {
    int ok = 0;
    ProfilerCost cost;
  };
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Message m;
    exec.setCommEnabled(false);  // the other ranks are not in this process's calibration
    try {
      std::vector<IterationRecord> plain;
      m.cost = calibrateOnReplay(exec, plan, hot, plain);
      m.ok = 1;
    } catch (const std::exception& e) {
      ETB_LOG(kWarn) << "host-time calibration on the replay's ops failed: " << e.what();
    }
    const ssize_t n = write(fds[1], &m, sizeof m);
    _exit(n == static_cast<ssize_t>(sizeof m) ? 0 : 1);  // no atexit handlers (MPI, CUDA)
  }
  close(fds[1]);
  Message m;
  size_t got = 0;
  while (pid > 0 && got < sizeof m) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(&m) + got, sizeof m - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  if (pid > 0) {
    waitpid(pid, &status, 0);
    const size_t pages = ownPagesAfterFork();
    ETB_LOG(kDebug) << "host time: " << pages << " pages shared with the calibration child written";
  }
  if (pid <= 0 || got != sizeof m || m.ok == 0) return std::nullopt;
  return m.cost;
}

HostPlan prepareHostPlan(const trace::Trace& trace, const trace::Iteration& it,
                         const std::vector<SelectedNode>& selected, const Plan& plan,
                         const ProfilerCost& cost, double stall_us) {
  HostPlan hp;
  hp.cost = cost;
  hp.stall_us = stall_us;
  hp.gaps = originalHostGaps(trace, it, selected, cost, stall_us);
  std::unordered_map<uint32_t, double> by_node;
  for (size_t k = 0; k < selected.size(); ++k) by_node[selected[k].index] = hp.gaps.before_us[k];
  for (const PlanStep& s : plan.steps) {
    auto f = by_node.find(s.node);
    hp.original_us.push_back(f == by_node.end() ? 0.0 : f->second);
  }
  hp.before_us = hp.original_us;
  hp.after_us = hp.gaps.after_us;
  hp.emulated_us = hp.gaps.emulated_us;
  ETB_LOG(kInfo) << "host time: " << hp.gaps.emulated_us / 1e3 << " ms per iteration in the "
                 << "original (" << hp.gaps.recorded_us / 1e3 << " ms of gaps profiled, "
                 << hp.gaps.boundaries << " instrumented event boundaries in them, "
                 << hp.gaps.label_boundaries << " of labels, " << hp.gaps.stalled_us / 1e3
                 << " ms in " << hp.gaps.stalls << " stalls)";
  return hp;
}

void subtractReplayGaps(HostPlan& hp, const std::vector<IterationRecord>& ops_only) {
  ETB_CHECK(!ops_only.empty(), "no ops-only iteration to measure the replay's gaps on");
  const size_t steps = hp.original_us.size();
  std::vector<double> lead(steps), per_iter, tails;
  std::vector<double> xs;
  for (size_t i = 0; i < steps; ++i) {
    xs.clear();
    for (const IterationRecord& r : ops_only) {
      if (i < r.lead_us.size()) xs.push_back(r.lead_us[i]);
    }
    lead[i] = medianOf(xs);
  }
  for (const IterationRecord& r : ops_only) {
    tails.push_back(r.tail_us);
    per_iter.push_back(std::accumulate(r.lead_us.begin(), r.lead_us.end(), r.tail_us));
  }
  hp.replay_between_us = medianOf(per_iter);
  hp.before_us = emulatedGaps(hp.original_us, lead);
  hp.after_us = std::max(0.0, hp.gaps.after_us - medianOf(tails));
  hp.emulated_us = std::accumulate(hp.before_us.begin(), hp.before_us.end(), hp.after_us);
  ETB_LOG(kInfo) << "host time: " << hp.emulated_us / 1e3 << " ms per iteration emulated ("
                 << hp.gaps.emulated_us / 1e3 << " ms in the original less what the replay "
                 << "spends between the same ops; " << hp.replay_between_us / 1e3
                 << " ms per iteration between all ops)";
}

HostTime hostTimeResult(const HostPlan& hp, const std::vector<IterationRecord>& with_host) {
  HostTime h;
  std::vector<double> ms;
  for (const auto& rec : with_host) ms.push_back(rec.wall_us / 1e3);
  h.with_host_iter_ms = summarize(ms);
  h.emulated_ms = hp.emulated_us / 1e3;
  h.original_host_ms = hp.gaps.emulated_us / 1e3;
  h.replay_between_ms = hp.replay_between_us / 1e3;
  h.recorded_gap_ms = hp.gaps.recorded_us / 1e3;
  h.profiler_event_us = hp.cost.per_event_us;
  h.profiler_label_us = hp.cost.per_label_us;
  h.profiler_gap_us = hp.cost.per_gap_us;
  h.profiler_cost_from = hp.cost_from_recording ? "recording" : "here";
  h.gaps = hp.gaps.gaps;
  h.boundaries = hp.gaps.boundaries;
  h.label_boundaries = hp.gaps.label_boundaries;
  h.untimed_ops = hp.gaps.untimed;
  h.stalls = hp.gaps.stalls;
  h.stalled_ms = hp.gaps.stalled_us / 1e3;
  h.stall_limit_us = hp.stall_us;
  return h;
}

}  // namespace etb::replay::detail
