// SPDX-License-Identifier: MIT
#include "replayer/chrome_trace.h"

#include <set>
#include <utility>

#include "core/base/file_io.h"

namespace etb::replay {
namespace {
using nlohmann::json;

const char* laneName(int tid) {
  switch (tid) {
    case 0: return "compute";
    case 1: return "communication";
    default: return "other";
  }
}

json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"},  {"pid", pid},
          {"tid", tid},   {"args", {{"name", name}}}};
}
}  // namespace

json chromeTraceJson(const ReplayResult& result) {
  json events = json::array();
  std::set<std::pair<int, int>> lanes;
  for (const TimelineEvent& e : result.timeline) {
    events.push_back({{"name", e.name},
                      {"cat", e.category},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.dur_us},
                      {"pid", e.rank},
                      {"tid", e.tid},
                      {"args", {{"node_id", e.node_id}}}});
    lanes.emplace(e.rank, e.tid);
  }
  std::set<int> ranks;
  for (const auto& [rank, tid] : lanes) {
    if (ranks.insert(rank).second) {
      events.push_back(metadata("process_name", rank, 0,
                                "rank " + std::to_string(rank)));
    }
    events.push_back(metadata("thread_name", rank, tid, laneName(tid)));
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"trace", result.trace_path},
            {"device", result.device},
            {"etbench_version", result.etbench_version}}}};
}

void writeChromeTrace(const ReplayResult& result, const std::string& path) {
  writeFileMaybeGzip(path, chromeTraceJson(result).dump() + "\n");
}

}  // namespace etb::replay
