// SPDX-License-Identifier: MIT
#include "generator/bench_runner.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>

#include "core/base/error.h"
#include "core/base/log.h"
#include "replayer/comm/communicator.h"
#include "replayer/op_libraries.h"
#include "replayer/report_outputs.h"

namespace etb::gen {
namespace {

constexpr const char* kUsage =
    "usage: bench [--warmup N] [--iters N] [--device cpu|cuda[:N]] [--threads N]\n"
    "             [--device-op-iters N (cuda: extra iterations timing each op on the device)]\n"
    "             [--seed N] [--index-dist uniform|zipf:ALPHA] [--verify] [--quiet]\n"
    "             [--report-json FILE] [--report-html FILE] [--chrome-trace FILE]\n"
    "             [--comm-timeout SECONDS] [--log-level debug|info|warn|error]\n"
    "             [--load-library OPS.so (e.g. torchvision's _C.so; repeatable)]\n"
    "Multi-rank recordings: mpirun -np RANKS ./bench ...\n";

long long toInt(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') {
    ETB_INPUT_ERROR(SourceLoc{flag}, "expected an integer, got \"", text, "\"");
  }
  return v;
}

double toDouble(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') {
    ETB_INPUT_ERROR(SourceLoc{flag}, "expected a number, got \"", text, "\"");
  }
  return v;
}

using Setter = std::function<void(BenchFlags&, const std::string&, const std::string&)>;

const std::map<std::string, Setter>& valueFlags() {
  static const std::map<std::string, Setter> flags = {
      {"--warmup", [](BenchFlags& f, auto& n, auto& v) { f.options.warmup = static_cast<int>(toInt(n, v)); }},
      {"--iters", [](BenchFlags& f, auto& n, auto& v) { f.options.iters = static_cast<int>(toInt(n, v)); }},
      {"--threads", [](BenchFlags& f, auto& n, auto& v) { f.options.threads = static_cast<int>(toInt(n, v)); }},
      {"--seed", [](BenchFlags& f, auto& n, auto& v) { f.options.seed = static_cast<uint64_t>(toInt(n, v)); }},
      {"--device", [](BenchFlags& f, auto&, auto& v) { f.options.device = v; }},
      {"--device-op-iters",
       [](BenchFlags& f, auto& n, auto& v) { f.options.device_op_iters = static_cast<int>(toInt(n, v)); }},
      {"--index-dist", [](BenchFlags& f, auto&, auto& v) { f.options.index_dist = v; }},
      {"--report-json", [](BenchFlags& f, auto&, auto& v) { f.report_json = v; }},
      {"--report-html", [](BenchFlags& f, auto&, auto& v) { f.report_html = v; }},
      {"--chrome-trace", [](BenchFlags& f, auto&, auto& v) { f.chrome_trace = v; }},
      {"--log-level", [](BenchFlags& f, auto&, auto& v) { f.log_level = v; }},
      {"--comm-timeout", [](BenchFlags& f, auto& n, auto& v) { f.comm_timeout = toDouble(n, v); }},
      {"--load-library", [](BenchFlags& f, auto&, auto& v) { f.libraries.push_back(v); }},
  };
  return flags;
}

int runParsed(const BenchProgram& p, BenchFlags& f) {
  if (!f.log_level.empty()) {
    LogLevel level;
    if (!parseLogLevel(f.log_level.c_str(), &level)) {
      ETB_INPUT_ERROR(SourceLoc{"--log-level"}, "unknown level \"", f.log_level, "\"");
    }
    setLogLevel(level);
  }
  replay::CommOptions copts;
  copts.device = f.options.device.empty() ? "cpu" : f.options.device;
  copts.timeout_s = f.comm_timeout;
  std::unique_ptr<replay::Communicator> comm = replay::makeCommunicator(copts);
  setLogRank(comm->rank());
  try {
    if (p.ranks > 1 && comm->worldSize() != p.ranks) {
      ETB_INPUT_ERROR(SourceLoc{p.name}, "recorded with ", p.ranks, " ranks but the job has ",
                      comm->worldSize(), " (run: mpirun -np ", p.ranks, " ", f.options.argv[0],
                      ")");
    }
    replay::loadOpLibraries(f.libraries);  // before the ops are resolved
    const trace::Trace t = p.build(p.ranks > 1 ? comm->rank() : 0);
    // As et_replay: MPI starts the job, the trace's process groups name the
    // backend the collectives run on (gloo for a gloo recording).
    comm = replay::switchCommBackend(comm, replay::pickCommBackend(t, copts), copts);
    f.options.iteration = p.iteration;
    f.options.original_source = p.original_source;
    if (!p.original_ms.empty()) {
      const size_t r = p.ranks > 1 ? static_cast<size_t>(comm->rank()) : 0;
      f.options.original_ms = p.original_ms[std::min(r, p.original_ms.size() - 1)];
    }
    if (f.options.threads == 0) f.options.threads = p.threads;
    replay::ReplayDiagnostics diag;
    const replay::ReplayResult r = replay::replayTrace(t, f.options, *comm, &diag);
    for (const std::string& m : diag.output_mismatches) ETB_LOG(kWarn) << m;
    if (comm->rank() != 0) return 0;
    replay::writeReports(r, {!f.quiet, f.report_json, f.report_html, f.chrome_trace}, std::cout);
    return diag.output_mismatches.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    // One failing rank must not leave the others waiting in a collective.
    if (comm->worldSize() > 1) {
      comm->abortJob(std::string(p.name) + ": error: " + e.what(),
                     dynamic_cast<const InputError*>(&e) ? 2 : 1);
    }
    throw;
  }
}
}  // namespace

BenchFlags parseBenchFlags(const std::vector<std::string>& args) {
  BenchFlags f;
  f.options.argv = args;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string name = args[i], value;
    const size_t eq = name.find('=');
    const bool inline_value = name.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "--help" || name == "-h") {
      f.help = true;
    } else if (name == "--verify" || name == "--quiet") {
      (name == "--verify" ? f.options.verify_outputs : f.quiet) = true;
    } else if (auto it = valueFlags().find(name); it != valueFlags().end()) {
      if (!inline_value) {
        if (i + 1 >= args.size()) ETB_INPUT_ERROR(SourceLoc{name}, "needs a value");
        value = args[++i];
      }
      it->second(f, name, value);
    } else {
      ETB_INPUT_ERROR(SourceLoc{name}, "unknown flag (see --help)");
    }
  }
  return f;
}

int runBench(const BenchProgram& program, int argc, char** argv) {
  try {
    BenchFlags f = parseBenchFlags(std::vector<std::string>(argv, argv + argc));
    if (f.help) {
      std::cout << program.name << ": replays one recorded training iteration.\n" << kUsage;
      return 0;
    }
    return runParsed(program, f);
  } catch (const InputError& e) {
    std::cerr << program.name << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << program.name << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace etb::gen
