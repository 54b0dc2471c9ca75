// SPDX-License-Identifier: MIT
//
// The run flags of et_replay and of every generated benchmark program, in one
// table: name, help, how the value is checked and what it sets. et_replay
// registers them with CLI11 (replay_main.cc); generated programs, which carry
// this runtime but not CLI11, parse them with generator/bench_runner.cc. A
// flag added here reaches both; one that needs the trace file (--kineto,
// --iteration, ...) is marked et_replay-only, since a generated program has
// its iteration compiled in.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "replayer/replayer.h"

namespace etb::replay {

// What the flags set: the engine's options and what the mains do around it.
struct RunFlags {
  ReplayOptions options;
  std::string comm;                    // --comm; "" = the trace's backend
  std::vector<double> original_ms;     // --original-ms, before the caller applies it
  std::string original_metrics;        // --original-metrics (sidecar path)
  std::vector<std::string> libraries;  // --load-library, repeatable
  std::string report_json, report_html, chrome_trace, log_level;
  double comm_timeout = 0;
  bool quiet = false;
  // et_replay only (a generated program has no trace file to go with them).
  std::string kineto, original_meta, timed_trace;
};

enum class FlagUse : uint8_t { kBoth, kEtReplayOnly };

struct FlagSpec {
  const char* name = "";  // "--host-time"
  const char* type = "";  // value's kind in help ("INT", "TEXT"); "" = a switch
  const char* help = "";
  const char* program_help = nullptr;  // a generated program's, where it differs
  FlagUse use = FlagUse::kBoth;
  bool repeatable = false;  // every occurrence is kept (--load-library)
  char delimiter = 0;       // one occurrence may hold several values (',')
  std::vector<std::string> choices;  // the value must be one of these
  bool ranged = false;               // the value must lie in [lo, hi]
  double lo = 0, hi = 0;
  // Checks `value` (InputError naming the flag) and stores it; a switch gets "".
  std::function<void(RunFlags&, const std::string& value)> set;
  // The default as help shows it; null = none shown.
  std::function<std::string(const RunFlags&)> shown;
};

// Every flag, in et_replay's help order.
const std::vector<FlagSpec>& replayFlags();

// The spec named `name` ("--iters") among those `use` allows; nullptr if none.
const FlagSpec* findReplayFlag(const std::string& name, bool generated_program);

// Applies one occurrence: splits at the delimiter, checks choices and range,
// then calls set(). InputError naming the flag on a bad value.
void applyFlag(const FlagSpec& spec, RunFlags& flags, const std::string& value);

// Sets the log level from --log-level (InputError on an unknown one).
void applyLogLevel(const RunFlags& flags);

// "  --iters INT   measured iterations [5]" lines of the flags a generated
// program takes, for its --help and README.
std::string programFlagsHelp();

}  // namespace etb::replay
