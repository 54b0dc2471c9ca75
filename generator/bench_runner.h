// SPDX-License-Identifier: MIT
//
// The main() of every generated benchmark program: parses its flags, builds
// this rank's trace from the generated code, replays it with replayTrace()
// (the engine et_replay runs) and writes the same reports. Copied into each
// generated folder with the runtime.
#pragma once

#include <string>
#include <vector>

#include "core/model/trace.h"
#include "replayer/replayer.h"

namespace etb::gen {

// What the generated code knows about its recording.
struct BenchProgram {
  const char* name = "";             // benchmark name (from the trace file)
  int ranks = 1;                     // recorded ranks; 1 = one trace for every rank
  int iteration = 0;                 // recorded iteration (index into Trace::iterations)
  const char* original_source = "";  // "kineto" when Kineto times were linked
  trace::Trace (*build)(int rank) = nullptr;  // rebuilds rank `rank`'s trace
  // The recording's unprofiled steps per rank (ms; from its meta.json) and
  // its intra-op threads (the default for --threads); empty / 0 when unknown.
  std::vector<std::vector<double>> original_ms;
  int threads = 0;
};

struct BenchFlags {
  replay::ReplayOptions options;
  std::string report_json, report_html, chrome_trace, log_level;
  std::vector<std::string> libraries;  // --load-library, repeatable
  double comm_timeout = 0;
  bool quiet = false;
  bool help = false;
};

// Parses --warmup N --iters N --device D --threads N --seed N --index-dist S
// --report-json P --report-html P --chrome-trace P --verify --quiet
// --comm-timeout S --log-level L --load-library P --help (also --flag=value). Throws
// InputError naming the flag on anything else.
BenchFlags parseBenchFlags(const std::vector<std::string>& args);

// Runs the program; returns the exit code (0 ok, 1 failure or output
// mismatch under --verify, 2 bad input).
int runBench(const BenchProgram& program, int argc, char** argv);

}  // namespace etb::gen
