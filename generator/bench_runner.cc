// SPDX-License-Identifier: MIT
#include "generator/bench_runner.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/log.h"
#include "replayer/comm/communicator.h"
#include "replayer/op_libraries.h"
#include "replayer/op_selection.h"
#include "replayer/original_meta.h"
#include "replayer/original_metrics.h"
#include "replayer/report_outputs.h"

namespace etb::gen {
namespace {

constexpr const char* kUsage =
    "usage: bench [FLAGS]   (multi-rank recordings: mpirun -np RANKS ./bench ...)\n"
    "Flags (as et_replay's; --flag=value works too):\n";

// The original's system metrics: --original-metrics (a %d pattern gives
// each rank its own), else the sidecar et_generate embedded, if any.
void useOriginalMetrics(const BenchProgram& p, BenchFlags& f, int rank) {
  if (!f.original_metrics.empty()) {
    f.options.original_system =
        replay::readOriginalMetrics(rankFile(f.original_metrics, static_cast<size_t>(rank)));
    return;
  }
  if (p.original_metrics.empty()) return;
  const size_t r = std::min(static_cast<size_t>(p.ranks > 1 ? rank : 0), p.original_metrics.size() - 1);
  f.options.original_system =
      replay::parseOriginalMetrics(p.original_metrics[r].json, p.original_metrics[r].source);
}

// Before any iteration runs: a program generated without the profiler file
// has no times to emulate the original's host time from.
void checkHostTimes(const BenchProgram& p, const trace::Trace& t, const replay::ReplayOptions& o) {
  if (!o.emulate_host) return;
  const trace::Iteration it = replay::chooseIteration(t, p.iteration);
  if (it.start_us < 0 || it.dur_us <= 0) {
    ETB_INPUT_ERROR(SourceLoc{t.path}, "--host-time emulate needs the original's profiler times, "
                    "and ", p.name, " was generated without them (regenerate it: et_generate ",
                    t.path, " --kineto KINETO_FILE -o ...)");
  }
}

int runParsed(const BenchProgram& p, BenchFlags& f) {
  replay::applyLogLevel(f);
  replay::CommOptions copts;
  copts.device = f.options.device.empty() ? "cpu" : f.options.device;
  copts.timeout_s = f.comm_timeout;
  copts.backend = f.comm;
  if (!f.comm.empty()) replay::checkCommBackend(copts);  // a build without gloo says so at once
  // The job starts on the default backend; the trace (or --comm) then picks.
  replay::CommOptions start = copts;
  start.backend.clear();
  std::unique_ptr<replay::Communicator> comm = replay::makeCommunicator(start);
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
    if (!f.original_ms.empty()) {
      replay::useMeasuredOriginal(f.original_ms, f.options);  // the user's figures first
    } else if (!p.original_ms.empty()) {
      const size_t r = p.ranks > 1 ? static_cast<size_t>(comm->rank()) : 0;
      f.options.original_ms = p.original_ms[std::min(r, p.original_ms.size() - 1)];
    }
    useOriginalMetrics(p, f, comm->rank());
    if (f.options.threads == 0) f.options.threads = p.threads;
    checkHostTimes(p, t, f.options);
    replay::ReplayDiagnostics diag;
    const replay::ReplayResult r = replay::replayTrace(t, f.options, *comm, &diag);
    for (const std::string& m : diag.output_mismatches) ETB_LOG(kWarn) << m;
    if (comm->rank() != 0) return 0;
    replay::writeReports(r, {!f.quiet, f.report_json, f.report_html, f.chrome_trace}, std::cout);
    // Mismatches are logged either way; --verify makes them the exit status.
    return f.options.verify_outputs && !diag.output_mismatches.empty() ? 1 : 0;
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
      continue;
    }
    const replay::FlagSpec* spec = replay::findReplayFlag(name, /*generated_program=*/true);
    if (spec == nullptr) {
      if (replay::findReplayFlag(name, false) != nullptr) {
        ETB_INPUT_ERROR(SourceLoc{name}, "et_replay only: this program's recording (its iteration, "
                        "profiler times and original) is compiled in");
      }
      ETB_INPUT_ERROR(SourceLoc{name}, "unknown flag (see --help)");
    }
    const bool is_switch = *spec->type == '\0';
    if (is_switch && inline_value) ETB_INPUT_ERROR(SourceLoc{name}, "takes no value");
    if (!is_switch && !inline_value) {
      if (i + 1 >= args.size()) ETB_INPUT_ERROR(SourceLoc{name}, "needs a value");
      value = args[++i];
    }
    replay::applyFlag(*spec, f, value);
  }
  return f;
}

int runBench(const BenchProgram& program, int argc, char** argv) {
  try {
    BenchFlags f = parseBenchFlags(std::vector<std::string>(argv, argv + argc));
    if (f.help) {
      std::cout << program.name << ": replays one recorded training iteration.\n" << kUsage
                << replay::programFlagsHelp();
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
