// SPDX-License-Identifier: MIT
//
// Host-time emulation wired to a replay plan: the original's gaps per plan
// step (replayer/host_time.h), less what this replay already spends between
// the same ops, and the result for the report.
#pragma once

#include <optional>
#include <vector>

#include "replayer/executor.h"
#include "replayer/host_time.h"
#include "replayer/replay_result.h"

namespace etb::replay::detail {

struct HostPlan {
  HostGaps gaps;                     // the original's, instrumentation taken out
  ProfilerCost cost;
  double stall_us = 0;
  std::vector<double> original_us;   // per plan step: the original's gap before it
  std::vector<double> before_us;     // per plan step: what is spun (after subtraction)
  double after_us = 0;               // spun after the last step
  double replay_between_us = 0;      // the replay's own time between ops, per iteration
  double emulated_us = 0;            // sum of before_us and after_us
  bool cost_from_recording = false;  // cost's per-event figures are the recording's (meta.json)
};

// The start-up calibration (`hot`: a tight loop of one small op, its code
// and data in cache) under-states what the instrumentation cost the
// recording, whose callbacks competed with the model's own working set. So
// it is measured again on the replay's own ops: `rounds` plain and
// instrumented iterations (the recorder's ET observer and profiler on) give
// the CPU time per recorded event, and, per op, the part of its call that
// lies outside its profiled span (what a profiled gap holds per op). Labels
// are scaled by the same factor (the replay has none). The plain iterations
// are appended to `plain`.
ProfilerCost calibrateOnReplay(Executor& exec, const Plan& plan, const ProfilerCost& hot,
                               std::vector<IterationRecord>& plain, int rounds = 3);

// calibrateOnReplay in a forked child process, so that what the
// instrumentation allocates stays out of the replay being measured: the
// profiler's event buffers raise glibc's dynamic mmap threshold, after which
// the replay's own tensors stop faulting in fresh pages every iteration (the
// GPT sample's ops-only iterations ran 15% faster after an in-process
// calibration). Only where a fork is safe: CPU, one intra-op thread (an
// OpenMP team does not survive a fork); nothing otherwise (the caller keeps
// the start-up figure). In a multi-rank job the child runs with collectives
// off and leaves by _exit: it never calls MPI or the comm backend, whose
// threads and sockets stay the parent's.
std::optional<ProfilerCost> calibrateInChild(Executor& exec, const Plan& plan,
                                             const ProfilerCost& hot);

// A called step's profiled event: its duration and how many events it holds
// (itself and every event nested in it).
struct MatchedOp {
  size_t step = 0;
  double dur_us = 0;
  uint32_t events = 1;
};

// Per called step in `rec` (call_us >= 0), the op's profiled event in
// `events`: the next one of the step's name that starts after the last one
// matched ends, so nested events are passed over. Matching stops at the
// first step that finds none.
std::vector<MatchedOp> matchEvents(const Plan& plan, const IterationRecord& rec,
                                   std::vector<RecordedEvent> events);

// What the instrumentation added per recorded event to the calls that take
// at most `light_us` without it (the same step's call in `off`): there the
// instrumentation is most of the call, where over a whole iteration a few
// heavy kernels' noise drowns it (the conv net's estimate ranged 0.9-10 us).
// -1 when those calls hold fewer than kMinLightEvents events.
constexpr double kMinLightEvents = 50;
double lightOpCost(const IterationRecord& off, const IterationRecord& on,
                   const std::vector<MatchedOp>& matched, double light_us = 50);

// Per called step in `rec` (call_us >= 0), the op's profiled event in
// `events`: the next one of the step's name that starts after the last one
// matched ends, so nested events are passed over. Appends the part of each
// call outside its event's span to `outside`; returns how many steps found
// their event (matching stops at the first that finds none).
size_t outsideSpans(const Plan& plan, const IterationRecord& rec,
                    std::vector<RecordedEvent> events, std::vector<double>& outside);

HostPlan prepareHostPlan(const trace::Trace& trace, const trace::Iteration& it,
                         const std::vector<SelectedNode>& selected, const Plan& plan,
                         const ProfilerCost& cost, double stall_us);

// Takes from every gap what the replay spent there in `ops_only` (per step,
// the median over those iterations, which should not follow memory or check
// outputs: that is extra work). Needs at least one iteration.
void subtractReplayGaps(HostPlan& hp, const std::vector<IterationRecord>& ops_only);

HostTime hostTimeResult(const HostPlan& hp, const std::vector<IterationRecord>& with_host);

}  // namespace etb::replay::detail
