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
#include "replayer/replay_flags.h"
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
  // The recording's metrics sidecar per rank (et_generate embeds it when the
  // trace had one beside it or --original-metrics named one): its text and
  // where it came from; empty when none.
  struct Sidecar {
    std::string json, source;
  };
  std::vector<Sidecar> original_metrics;
};

// The flags et_replay shares with generated programs (replayer/replay_flags.h).
struct BenchFlags : replay::RunFlags {
  bool help = false;
};

// Parses the run flags of replay::replayFlags() a generated program takes
// (FlagUse::kBoth), as "--flag value" or "--flag=value", and --help. Throws
// InputError naming the flag on an unknown one, a missing or bad value, or
// an et_replay-only flag (whose trace file the program does not have).
BenchFlags parseBenchFlags(const std::vector<std::string>& args);

// Runs the program; returns the exit code (0 ok, 1 failure or output
// mismatch under --verify, 2 bad input).
int runBench(const BenchProgram& program, int argc, char** argv);

}  // namespace etb::gen
