// SPDX-License-Identifier: MIT
//
// et_generate TRACE -o DIR: reads the trace (one file, a per-rank pattern or
// a folder, as et_replay takes it), links Kineto times when given, and
// writes the benchmark folder.
#pragma once

#include <string>
#include <vector>

#include "core/model/trace.h"
#include "generator/emit_project.h"

namespace etb::gen {

struct GenerateOptions {
  std::string trace;   // file, "%d" pattern or folder
  std::string kineto;  // optional; a per-rank pattern for per-rank traces
  std::string original_meta;  // optional; a fleet sample's meta.json (unprofiled original)
  std::string original_metrics;  // optional; sidecar per rank ("%d"); default: beside the trace
  int iteration = 0;
  std::string out_dir;
  EmitOptions emit;
};

// Reads every rank of `pattern` (and links `kineto`, one per rank or one for
// all). Throws InputError naming the file for unreadable or empty input.
std::vector<trace::Trace> readRanks(const std::string& pattern, const std::string& kineto);

// The same for explicit lists (`kineto`: empty, one for all, or one per rank).
std::vector<trace::Trace> readTraceFiles(const std::vector<std::string>& paths,
                                         const std::vector<std::string>& kineto);

// The benchmark name for a trace path: the file name without the
// .et/.json/.gz suffixes and the rank part ("ddp2.rank0.et.json.gz" -> "ddp2").
std::string benchName(const std::string& path);

// Reads a fleet sample's meta.json into `info` (each of `ranks` ranks' own
// unprofiled steps, the recorded threads), as et_replay --original-meta does.
void attachOriginalMeta(const std::string& meta_path, int ranks, ProgramInfo& info);

// "<folder of trace>/<job>.meta.json" when it exists, "" otherwise: the
// fleet-sample layout, which suites pick up by themselves.
std::string metaBeside(const std::string& trace_path, const std::string& job_name);

// Reads each rank's metrics sidecar into `info`: `pattern` ("%d" = rank)
// when given, else <stem>.metrics.json beside each trace when there is one.
// A bad sidecar is an InputError naming it.
void attachOriginalMetrics(const std::vector<trace::Trace>& ranks, const std::string& pattern,
                           ProgramInfo& info);

ProgramInfo generateProgram(const GenerateOptions& options);

}  // namespace etb::gen
