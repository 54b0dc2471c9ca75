// SPDX-License-Identifier: MIT
//
// et_generate TRACE -o DIR [--kineto K] [--original-meta M] [--original-metrics S] [--iteration N]
// et_generate --suite FLEET_DIR [--suite MORE_DIR...] -o SUITE_DIR
// Writes a standalone benchmark program (or a weighted suite of them).
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/tools/tool_main.h"
#include "generator/generate.h"
#include "generator/suite.h"
#include "replayer/replay_flags.h"

int main(int argc, char** argv) {
  CLI::App app{"Turn an execution trace into a standalone C++ benchmark program", "et_generate"};
  etb::gen::GenerateOptions g;
  std::vector<std::string> suite;
  app.add_option("trace", g.trace, "PyTorch ET / Chakra trace; per rank: x.%d.et, x.rank%d.json or a folder");
  app.add_option("-o,--out", g.out_dir, "output folder (new, empty, or generated before)")->required();
  app.add_option("--kineto", g.kineto, "profiler (Kineto) trace(s) of the same run: original times");
  app.add_option("--original-meta", g.original_meta,
                 "a fleet sample's meta.json: compare with its unprofiled steps, default to its threads");
  app.add_option("--original-metrics", g.original_metrics,
                 "the recorder's metrics sidecar (per rank: %d), embedded so the program's report "
                 "shows the original's side (default: <stem>.metrics.json beside the trace)");
  app.add_option("--iteration", g.iteration, "recorded iteration (ProfilerStep) to replay")
      ->capture_default_str();
  app.add_option("--suite", suite, "folder of fleet traces: write a weighted suite instead (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--ops-per-file", g.emit.ops_per_file, "operators per translation unit")
      ->capture_default_str();
  app.footer("The generated program (./build/bench) takes et_replay's run flags, less those that "
             "need the trace file:\n" + etb::replay::programFlagsHelp());
  return etb::runTool(app, argc, argv, [&] {
    if (suite.empty() == g.trace.empty()) {
      ETB_INPUT_ERROR(etb::SourceLoc{"et_generate"}, "give either TRACE or --suite FLEET_DIR");
    }
    if (g.emit.ops_per_file == 0) ETB_INPUT_ERROR(etb::SourceLoc{"--ops-per-file"}, "must be > 0");
    if (!suite.empty()) {
      const etb::gen::SuiteSummary s = etb::gen::generateSuite(suite, g.out_dir, g.emit);
      std::cout << "suite: " << s.programs << " programs for " << s.traces << " traces in "
                << s.groups << " groups -> " << g.out_dir << "/run_suite.sh\n";
      return 0;
    }
    const etb::gen::ProgramInfo info = etb::gen::generateProgram(g);
    std::cout << "generated " << g.out_dir << ": " << info.ranks << " rank(s), " << info.ops
              << " replayed nodes, " << info.files << " translation units\n";
    return 0;
  });
}
