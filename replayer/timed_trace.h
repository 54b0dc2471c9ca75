// SPDX-License-Identifier: MIT
//
// The trace written back with the times this machine measured, so that
// "profile compute here, simulate the network at scale" is one pipeline:
//   et_replay T --write-timed-trace timed.et  ->  et_convert  ->  ASTRA-sim
// Every selected op that was replayed (and every communication node) gets
// the median of its measured iterations as its time (and, on a GPU, its
// median device time as gpu_dur_us); every other node's
// time is cleared, and profiled GPU kernels dropped, so nothing recorded
// elsewhere is mixed in. The Chakra
// writer turns these into exclusive duration_micros (chakra_schedule.h).
#pragma once

#include <string>

#include "core/model/trace.h"
#include "replayer/replay_result.h"

namespace etb::replay {

struct TimedTraceStats {
  size_t timed = 0;    // nodes given a measured time
  size_t skipped = 0;  // selected ops not replayed: no time
};

TimedTraceStats applyReplayTimes(trace::Trace& t, const ReplayResult& r);

// Writes `t` with r's times to `path` (format by extension, %d -> rank).
TimedTraceStats writeTimedTrace(trace::Trace t, const ReplayResult& r, const std::string& path,
                                int rank);

}  // namespace etb::replay
