// SPDX-License-Identifier: MIT
//
// What the recording's instrumentation (the ET observer and the CPU profiler
// with shapes) costs per event on this machine, measured at start-up: the
// profiled gaps between a recording's top-level ops hold that cost besides
// the original's host time (replayer/host_time.h takes it out again).
//
// Two kinds of event cost differently, so both are measured: an operator
// (the observer serialises its inputs and outputs) and a label (the autograd
// engine's "evaluate_function" scope and the backward node inside it, user
// record_function scopes: no schema, at most a gradient as input). Between
// two top-level ops of the LSTM sample lie ~3400 label boundaries; costing
// them as operators took out more than the gaps held.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace etb::replay {

struct ProfilerCost {
  double per_event_us = 0;  // an operator event: enter + exit callbacks in total
  double per_label_us = 0;  // a label event (no schema, <= 1 tensor input), in total
  double per_gap_us = 0;    // of an operator's cost, what lies between two consecutive ops
  uint64_t events = 0;      // operator events in one timed burst
  // Measured again on the replay's ops (calibrateOnReplay, host_plan.h):
  // op calls, and of them those whose profiled event was found.
  uint64_t ops_called = 0, ops_matched = 0;
};

// The recording's own figures: fleet_samples/record.py measures them in the
// recording process right after the traced step (meta.json
// "instrumentation"). On the same machine, quiet, a label cost the recording
// 1.0-2.7x what this process measures through libtorch's C++ API, an operator
// event 0.4-1.0x (18 recordings): the recording's figures are used where given.
struct RecordedInstrumentation {
  double per_event_us = 0;  // an operator event
  double per_label_us = 0;  // a label event
};

// `here` with the recording's per-event and per-label costs; of an
// operator's cost, the part outside its span keeps the share measured here.
ProfilerCost withRecordingCost(const ProfilerCost& here, const RecordedInstrumentation& rec);

// Times `ops` small dispatcher ops, and as many label pairs, with the ET
// observer and the profiler on and off (alternating, median of `rounds`).
// Takes well under a second.
ProfilerCost measureProfilerCost(int ops = 2000, int rounds = 9);

// CPU time of this thread, microseconds: unlike wall time it does not grow
// while the thread waits for a core.
double threadCpuUs();

struct RecordedEvent {
  std::string name;
  double start_us = 0, dur_us = 0;  // the profiler's (whole microseconds)
};

// Runs `body` with what the recorder had on (the ET observer writing to a
// scratch file, the CPU profiler recording shapes): its CPU time and the
// events the profiler kept, `labels` of them no aten operator.
struct InstrumentedRun {
  double cpu_us = 0;
  std::vector<RecordedEvent> events;
  uint64_t labels = 0;
};
InstrumentedRun runInstrumented(const std::function<void()>& body);

namespace detail {
// The mean of the values between the 10th and the 90th percentile: a
// profiler file has whole microseconds, whose median moves in steps of one
// (a 2.6 us gap read as 3); the trimmed mean keeps the fraction and, like the
// median, ignores a preempted moment.
double trimmedMean(std::vector<double> xs);
}  // namespace detail

}  // namespace etb::replay
