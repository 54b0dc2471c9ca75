// SPDX-License-Identifier: MIT
//
// The replay timeline as a Chrome trace (Trace Event Format), which opens in
// Perfetto (ui.perfetto.dev) and chrome://tracing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "replayer/replay_result.h"

namespace etb::replay {

// One complete ("ph": "X") event per timeline entry: pid = rank, tid = lane
// (0 compute, 1 communication), ts/dur in microseconds, args carry the node
// id and category. Metadata ("ph": "M") events name the ranks and lanes.
nlohmann::json chromeTraceJson(const ReplayResult& result);

// Writes chromeTraceJson() to `path` (gzip when it ends in ".gz"; Perfetto
// opens both). Throws RuntimeError when the file cannot be written.
void writeChromeTrace(const ReplayResult& result, const std::string& path);

}  // namespace etb::replay
