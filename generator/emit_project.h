// SPDX-License-Identifier: MIT
//
// Writes a generated benchmark folder: the trace code of every rank, main.cc,
// CMakeLists.txt, README.md, the replay runtime and the bundled json header.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/model/trace.h"
#include "generator/emit_trace.h"

namespace etb::gen {

// The file whose presence marks a folder as et_generate's (re-generation
// into it is allowed; into any other non-empty folder it is refused).
inline constexpr const char* kStampFile = ".etb_generated";

struct ProgramInfo {
  std::string name;       // benchmark name, from the trace file name
  std::string source;     // the TRACE argument as given
  int ranks = 1;
  int iteration = 0;
  bool kineto = false;    // original times come from a linked profiler trace
  size_t ops = 0;         // per rank, summed over ranks
  size_t comm_ops = 0;
  size_t files = 0;       // generated translation units
  double original_iter_ms = -1;  // median recorded iteration time, rank 0
  // From a fleet sample's meta.json (--original-meta, or <name>.meta.json
  // beside a suite's trace): each rank's unprofiled steps, which the program
  // compares against instead of the (profiled) Kineto step, and the threads
  // the recording ran with (the program's default). Empty / 0: none.
  std::string original_meta;
  std::vector<std::vector<double>> original_ms;
  int threads = 0;
  // Per rank, the recorder's metrics sidecar (text, path): beside the trace
  // or --original-metrics; the program's report shows the original's side.
  std::vector<std::pair<std::string, std::string>> original_metrics;
};

// Emits every rank's code (nothing is written yet), then checks `out_dir`
// (absent, empty, or stamped) and writes the folder. Throws InputError for
// an iteration with nothing to replay and for an output folder that is not
// et_generate's.
ProgramInfo writeProgram(const std::vector<trace::Trace>& ranks, ProgramInfo info,
                         const std::string& out_dir, const EmitOptions& options = {});

// Creates `dir` or clears the generated parts of a stamped one; throws
// InputError when it exists and is not et_generate's.
void prepareOutputDir(const std::string& dir);

// Writes `text` to `path`, creating parent folders.
void writeTextFile(const std::string& path, const std::string& text);

// True when the program needs MPI: more than one rank, or any collective.
bool needsMpi(const ProgramInfo& info);

}  // namespace etb::gen
