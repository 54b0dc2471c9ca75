// SPDX-License-Identifier: MIT
//
// The C++ that rebuilds one rank's replayed iteration: one statement per
// operator the replayer selects (same selectNodes() as et_replay), split over
// translation units and functions so big traces compile in parallel and in
// bounded memory.
#pragma once

#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::gen {

struct GeneratedFile {
  std::string path;  // relative to the output folder
  std::string text;
};

struct EmitOptions {
  size_t ops_per_file = 2000;     // translation unit size
  size_t ops_per_function = 200;  // keeps the compiler's per-function memory small
};

struct RankCode {
  std::vector<GeneratedFile> files;
  std::string build_function;  // "buildRank0": returns the rank's Trace
  size_t ops = 0;              // selected nodes (operators and comms)
  size_t comm_ops = 0;
};

// Throws InputError when iteration `iteration` of `t` has nothing to replay.
RankCode emitRank(const trace::Trace& t, int rank, int iteration, const EmitOptions& options);

}  // namespace etb::gen
