// SPDX-License-Identifier: MIT
//
// One entry point for every trace format. Readers live beside this file:
// et_json_reader.h (PyTorch ET JSON), chakra_reader.h (Chakra .et),
// kineto_linker.h (profiler traces, for original timings).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::trace {

struct ReadOptions {
  // Turn repairs (dangling parents, bad JSON fixed up, ...) into errors.
  bool strict = false;
  // Progress callback for long reads: (bytes done, bytes total). Tools pass
  // one that draws on a terminal; null = quiet.
  std::function<void(size_t, size_t)> progress;
  // Threads that parse a PyTorch ET JSON; 0 = one per core.
  unsigned threads = 0;
};

enum class FileKind { kUnknown, kPyTorchEt, kChakra, kKineto };

// Sniffs the content (after gunzip): a JSON object with "nodes" is a PyTorch
// ET, one with "traceEvents" a Kineto trace, otherwise a varint-delimited
// protobuf stream is taken as Chakra.
FileKind detectFileKind(const std::string& path);

// Reads a PyTorch ET JSON or Chakra .et file (plain or gzip).
Trace readTrace(const std::string& path, const ReadOptions& options = {});

// Writes by extension: ".et" (optionally ".et.gz") -> Chakra, ".json" or
// ".json.gz" -> PyTorch ET JSON 1.1.1 layout.
void writeTrace(const Trace& trace, const std::string& path);

// Expands a per-rank trace name into one path per rank:
//  - "bench.%d.et" / "bench.rank%d.json" (printf-style %d) for ranks 0..N-1,
//    stopping at the first missing file;
//  - a directory: every trace file inside, ordered by the rank number in its
//    name;
//  - anything else: the path itself (one trace).
std::vector<std::string> expandRankPaths(const std::string& pattern);

}  // namespace etb::trace
