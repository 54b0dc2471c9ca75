// SPDX-License-Identifier: MIT
//
// et_convert's work: read one trace or a per-rank set, optionally bring in
// the profiler's times (--kineto), write the other format, and for a
// multi-rank Chakra set also the communicator-group file and the simulator
// hand-off (rank count, files, ASTRA-sim flags).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

namespace etb::tools {

struct ConvertOptions {
  std::string in;      // a trace, a pattern with %d, or a folder
  std::string out;     // a file, a pattern with %d, or a prefix (multi-rank)
  std::string kineto;  // profiler trace; a pattern with %d for several ranks
  bool strict = false;
  // Below this share of operators linked, a --kineto file is refused as a
  // profile of another run.
  double min_linked_share = 0.5;
  // A per-rank set is read twice when its traces do not fit this many bytes
  // (group ids must agree across ranks before any rank is written).
  size_t keep_bytes = size_t{1} << 30;
};

// Throws InputError for bad input (exit 2 in the tool). Returns 0.
int runConvert(const ConvertOptions& options, std::ostream& out);

// Where a per-rank set's communicator groups go: "<prefix>.comm_group.json"
// for an output "<prefix>.%d.et" or prefix "<prefix>".
std::string commGroupPath(const std::string& out);

}  // namespace etb::tools
