// SPDX-License-Identifier: MIT
//
// What a composition changes, for --dry-run and the closing summary: the
// replayable ops per name and the collectives per type and group with their
// per-call message sizes.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::compose {

struct CollectiveSummary {
  uint64_t calls = 0;
  uint64_t bytes = 0;             // summed over the calls
  std::set<uint64_t> call_bytes;  // distinct per-call sizes
};

struct TraceSummary {
  size_t ranks = 1;
  size_t nodes = 0;
  size_t iterations = 0;
  std::map<std::string, uint64_t> ops;                  // top-level ops per name
  std::map<std::string, CollectiveSummary> collectives; // "all_reduce @ group 0"
};

// Summary of rank 0 (`ranks` counts the traces).
TraceSummary summarize(const std::vector<trace::Trace>& ranks);

// "op | before | after" and "collective | calls | bytes per call" tables,
// rows that changed first.
void printChanges(const TraceSummary& before, const TraceSummary& after, std::ostream& os);

}  // namespace etb::compose
