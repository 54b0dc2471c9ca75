// SPDX-License-Identifier: MIT
//
// et_inspect TRACE [--kineto K] [--json] [--top N] [--strict]
// Prints what a user wants to know first about an execution trace.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/kineto/kineto_linker.h"
#include "core/base/progress.h"
#include "core/tools/tool_main.h"
#include "core/trace_io.h"
#include "core/tools/trace_summary.h"

int main(int argc, char** argv) {
  CLI::App app{"Summarise a PyTorch ET JSON or Chakra .et trace", "et_inspect"};
  std::string path;
  std::string kineto;
  bool as_json = false;
  bool strict = false;
  size_t top = 10;
  app.add_option("trace", path, "PyTorch ET JSON (.json/.json.gz) or Chakra .et")
      ->required();
  app.add_option("--kineto", kineto,
                 "profiler (Kineto) trace of the same run, for operator times");
  app.add_flag("--json", as_json, "print the summary as JSON");
  app.add_flag("--strict", strict, "refuse a trace the reader would have to repair");
  app.add_option("--top", top, "operators listed per table")->capture_default_str();

  return etb::runTool(app, argc, argv, [&] {
    etb::trace::ReadOptions options;
    options.strict = strict;
    etb::ProgressBar bar = etb::ProgressBar::onTerminal("reading " + path);
    options.progress = bar.callback();
    // Deliberately never freed: a large trace takes a good share of its load
    // time to free, and the process ends right after printing.
    etb::trace::Trace& trace = *new etb::trace::Trace(etb::trace::readTrace(path, options));
    bar.finish();

    etb::trace::LinkStats link;
    if (!kineto.empty()) link = etb::trace::linkKineto(trace, kineto);
    const etb::trace::TraceSummary summary = etb::trace::summarizeTrace(trace, top);

    if (as_json) {
      nlohmann::json j = etb::trace::summaryToJson(summary);
      if (!kineto.empty()) {
        j["kineto"] = {{"path", kineto},
                       {"key", link.key},
                       {"operators", link.operators},
                       {"linked_operators", link.linked_operators},
                       {"linked_nodes", link.linked_nodes},
                       {"kernels", link.kernels}};
      }
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    etb::trace::printSummary(summary, std::cout);
    if (!kineto.empty()) {
      std::cout << "\n# kineto link: " << kineto << "\n  key \"" << link.key << "\", "
                << link.linked_operators << " of " << link.operators
                << " operators and " << link.linked_nodes << " nodes timed, "
                << link.kernels << " kernels\n";
    }
    return 0;
  });
}
