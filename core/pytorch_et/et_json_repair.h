// SPDX-License-Identifier: MIT
//
// Repair pass for the invalid JSON that ExecutionTraceObserver writes by
// hand (pytorch/pytorch#126703, mlcommons/chakra#166). Internal to the ET
// JSON reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace etb::trace::detail {

struct JsonRepair {
  std::string text;                // the rewritten document
  std::vector<std::string> fixes;  // one line per kind of fix, with counts
  size_t first_defect = std::string_view::npos;  // input byte offset
};

// Rewrites `text` into JSON simdjson accepts: escapes control characters,
// stray quotes and lone backslashes inside strings, replaces invalid UTF-8,
// drops stray commas and unmatched closers, inserts missing commas and
// closers, and cuts a truncated tail back to the last complete node before
// closing the open containers. Linear time; never throws.
JsonRepair repairJson(std::string_view text);

// 1-based line number of byte `offset` in `text`.
uint64_t lineAt(std::string_view text, size_t offset);

}  // namespace etb::trace::detail
