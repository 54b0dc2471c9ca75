// SPDX-License-Identifier: MIT
//
// et_convert IN OUT [--strict]
// Converts between PyTorch ET JSON (.json, .json.gz) and Chakra (.et,
// .et.gz), chosen by OUT's extension. Multi-rank input (a "%d" pattern or a
// folder) writes one file per rank: OUT holds "%d", or OUT is a prefix and
// rank r goes to "<prefix>.<r>.et" (the Chakra / ASTRA-sim naming).
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/base/error.h"
#include "core/base/progress.h"
#include "core/tools/tool_main.h"
#include "core/trace_io.h"

namespace {

const char* const kExtensions[] = {".json.gz", ".et.gz", ".json", ".et"};

// The known trace extension `path` ends with, or "".
std::string extensionOf(const std::string& path) {
  for (const char* ext : kExtensions) {
    const std::string e(ext);
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) {
      return e;
    }
  }
  return "";
}

// Output path of rank `r` for multi-rank input.
std::string rankOutput(const std::string& out, size_t r) {
  const size_t at = out.find("%d");
  if (at != std::string::npos) {
    return out.substr(0, at) + std::to_string(r) + out.substr(at + 2);
  }
  const std::string ext = extensionOf(out);
  if (ext.empty()) return out + "." + std::to_string(r) + ".et";
  return out.substr(0, out.size() - ext.size()) + "." + std::to_string(r) + ext;
}

bool isMultiRank(const std::string& in) {
  std::error_code ec;
  return in.find("%d") != std::string::npos || std::filesystem::is_directory(in, ec);
}

void convertOne(const std::string& in, const std::string& out, bool strict) {
  etb::trace::ReadOptions options;
  options.strict = strict;
  etb::ProgressBar bar = etb::ProgressBar::onTerminal("reading " + in);
  options.progress = bar.callback();
  const etb::trace::Trace trace = etb::trace::readTrace(in, options);
  bar.finish();
  etb::trace::writeTrace(trace, out);
  std::cout << "wrote " << out << " (" << trace.nodes.size() << " nodes, from " << in
            << ")\n";
}

int convert(const std::string& in, const std::string& out, bool strict) {
  const bool multi = isMultiRank(in);
  if (extensionOf(out).empty() && (!multi || out.find("%d") != std::string::npos)) {
    ETB_INPUT_ERROR(etb::SourceLoc{out}, "output must end in .json, .json.gz, .et or "
                                         ".et.gz (it picks the format)");
  }
  if (!multi) {
    convertOne(in, out, strict);
    return 0;
  }
  const std::vector<std::string> inputs = etb::trace::expandRankPaths(in);
  if (inputs.empty()) {
    ETB_INPUT_ERROR(etb::SourceLoc{in}, "no per-rank trace files found");
  }
  for (size_t r = 0; r < inputs.size(); ++r) convertOne(inputs[r], rankOutput(out, r), strict);
  std::cout << "converted " << inputs.size() << " rank(s)\n";
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Convert between PyTorch ET JSON and Chakra .et", "et_convert"};
  std::string in;
  std::string out;
  app.add_option("in", in, "input trace, a per-rank pattern (bench.%d.json) or a folder")
      ->required();
  app.add_option("out", out,
                 "output (.json, .json.gz, .et, .et.gz); for several ranks a "
                 "pattern with %d or a prefix (-> prefix.<rank>.et)")
      ->required();
  bool strict = false;
  app.add_flag("--strict", strict, "refuse input the reader would have to repair");
  return etb::runTool(app, argc, argv, [&] { return convert(in, out, strict); });
}
