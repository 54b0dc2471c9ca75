// SPDX-License-Identifier: MIT
//
// et_convert IN OUT [--kineto K] [--strict]
// Converts between PyTorch ET JSON (.json, .json.gz) and Chakra (.et,
// .et.gz), chosen by OUT's extension. Multi-rank input (a "%d" pattern or a
// folder) writes one file per rank: OUT holds "%d", or OUT is a prefix and
// rank r goes to "<prefix>.<r>.et" (the Chakra / ASTRA-sim naming); a Chakra
// set also gets "<prefix>.comm_group.json" and the ASTRA-sim flags to use.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/tools/convert_run.h"
#include "core/tools/tool_main.h"

int main(int argc, char** argv) {
  CLI::App app{"Convert between PyTorch ET JSON and Chakra .et", "et_convert"};
  etb::tools::ConvertOptions o;
  app.add_option("in", o.in, "input trace, a per-rank pattern (bench.%d.json) or a folder")
      ->required();
  app.add_option("out", o.out,
                 "output (.json, .json.gz, .et, .et.gz); for several ranks a "
                 "pattern with %d or a prefix (-> prefix.<rank>.et)")
      ->required();
  app.add_option("--kineto", o.kineto,
                 "profiler trace of the same run (per-rank pattern with %d): fills "
                 "duration_micros with each op's exclusive time");
  app.add_flag("--strict", o.strict, "refuse input the reader would have to repair");
  return etb::runTool(app, argc, argv, [&] { return etb::tools::runConvert(o, std::cout); });
}
