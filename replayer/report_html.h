// SPDX-License-Identifier: MIT
//
// The replay report as one self-contained HTML page: inline CSS and inline
// SVG charts, no script, font or network access, so it can be mailed or
// attached to a ticket and read anywhere.
#pragma once

#include <string>

#include "replayer/replay_result.h"

namespace etb::replay {

// The page as a string. Every string that comes from the trace or the
// command line is HTML-escaped.
std::string reportHtml(const ReplayResult& result);

// Writes reportHtml() to `path`; throws RuntimeError when it cannot.
void writeReportHtml(const ReplayResult& result, const std::string& path);

}  // namespace etb::replay
