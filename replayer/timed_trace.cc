// SPDX-License-Identifier: MIT
#include "replayer/timed_trace.h"

#include "core/base/file_io.h"
#include "core/trace_io.h"

namespace etb::replay {

TimedTraceStats applyReplayTimes(trace::Trace& t, const ReplayResult& r) {
  for (trace::Node& n : t.nodes) {
    n.dur_us = -1;
    n.gpu_dur_us = -1;
  }
  t.kernels.clear();  // profiled kernel times would be mixed with measured ones
  TimedTraceStats s;
  for (const OpStat& op : r.ops) {
    trace::Node* n = t.find(op.node_id);
    if (n == nullptr) continue;
    if (!op.replayed && !op.is_comm) {
      ++s.skipped;
      continue;
    }
    n->dur_us = op.replay_us;
    // The replay's own device time where it timed one (GPU replays).
    if (op.device_us >= 0) n->gpu_dur_us = op.device_us;
    ++s.timed;
  }
  return s;
}

TimedTraceStats writeTimedTrace(trace::Trace t, const ReplayResult& r, const std::string& path,
                                int rank) {
  const TimedTraceStats s = applyReplayTimes(t, r);
  trace::writeTrace(t, rankFile(path, static_cast<size_t>(rank)));
  return s;
}

}  // namespace etb::replay
