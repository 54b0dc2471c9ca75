// SPDX-License-Identifier: MIT
//
// Host-overhead emulation (et_replay --host-time emulate): the original spent
// CPU time between and around its top-level ops (Python, the autograd engine,
// optimizer loops) that a replay of the ops alone does not. The profiler file
// shows those gaps, inflated by the recording's own instrumentation (the ET
// observer and the profiler run callbacks on every event). We measure that
// cost here, on this machine, and subtract it per instrumented event that
// fell into a gap; the executor then spins for what is left before each op.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/trace.h"
#include "replayer/op_selection.h"
#include "replayer/profiler_cost.h"

namespace etb::replay {

// The original's host time around the selected ops of one iteration.
struct HostGaps {
  std::vector<double> before_us;  // per selected node: host time before it
  double after_us = 0;            // after the last op, to the iteration's end
  double recorded_us = 0;         // sum of the gaps as profiled
  double emulated_us = 0;         // sum after removing instrumentation
  uint64_t gaps = 0;              // gaps longer than zero
  uint64_t boundaries = 0;        // instrumented event starts/ends in gaps
  uint64_t label_boundaries = 0;  // of them, of labels (costed at per_label_us)
  uint64_t untimed = 0;           // selected nodes the profiler did not time
  uint64_t stalls = 0;            // eventless stretches longer than stall_us
  double stalled_us = 0;          // their length, summed (dropped)
};

// Needs a Kineto-linked trace (node and ProfilerStep times): InputError
// naming the trace otherwise. Nodes on other threads than the iteration's
// marker (autograd or comm workers) get no gap: they overlap the main one.
// A stretch of a gap with no event longer than `stall_us` (0 = no limit) is
// dropped: the recording was not running there (preempted, a throttled VM,
// the observer flushing its file), as a CPU-bound step between two torch ops
// rarely is for that long; what was dropped is reported, not hidden.
HostGaps originalHostGaps(const trace::Trace& trace, const trace::Iteration& it,
                          const std::vector<SelectedNode>& selected,
                          const ProfilerCost& cost, double stall_us = 1000);

// The host time to insert before each op: what the original spent there
// less what the replay already spends between the same two ops (its own
// argument set-up, bookkeeping and frees, measured per step in ops-only
// iterations), never negative. Without the subtraction that time counts
// twice. `replay_us` may be shorter (missing entries count as zero).
std::vector<double> emulatedGaps(const std::vector<double>& original_us,
                                 const std::vector<double>& replay_us);

// Busy-waits until this thread has used `us` microseconds of CPU: the
// original's host time was CPU work, and takes longer in wall time when the
// thread has to wait for a core, as the original's would have. Returns the
// CPU time actually spent (at least `us`; a few hundred ns more); `reads`,
// when given, gets the number of clock reads that took.
double spinFor(double us, int* reads = nullptr);

namespace detail {
// How much of each spin's own figure goes into the estimate of a read.
constexpr double kReadCostWeight = 0.05;
// A spin whose reads took this many times the estimate each was preempted.
constexpr double kPreemptedReads = 8;
// The estimate of one clock read after a spin of `reads` reads that took
// `spent_us`: a moving average that leaves preempted spins out.
double nextReadCost(double estimate, double spent_us, int reads);
}  // namespace detail

// Spins for a sequence of gaps so that their sum comes out right. The
// thread's CPU clock is read through a system call (0.5-1.5 us on a VM): a
// spin costs about one read more than it measures, so that read's cost
// (measured at construction, then followed from the spins themselves) is
// taken off each spin, and what one spin still overshoots comes off the
// next one.
class HostSpinner {
 public:
  HostSpinner();
  void spin(double us);
  void reset() { debt_us_ = 0; }

 private:
  double read_us_ = 0;  // one read of the thread's CPU clock
  double debt_us_ = 0;  // spun beyond what was asked so far (< 0: owed)
};

}  // namespace etb::replay
