// SPDX-License-Identifier: MIT
//
// Where a finished replay's report goes: the terminal table, JSON, HTML and
// the Chrome trace. et_replay and the generated programs take the same flags
// and write through this one function, so their outputs cannot drift apart.
#pragma once

#include <ostream>
#include <string>

#include "replayer/replay_result.h"

namespace etb::replay {

struct ReportOutputs {
  bool terminal = true;                  // off with --quiet
  std::string json, html, chrome_trace;  // paths; empty = not written
};

// Prints and writes every output asked for (rank 0's job).
void writeReports(const ReplayResult& result, const ReportOutputs& outputs, std::ostream& terminal);

}  // namespace etb::replay
