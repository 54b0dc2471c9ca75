// SPDX-License-Identifier: MIT
//
// et_replay TRACE [--kineto K] [--device cpu|cuda] [--comm mpi|gloo|nccl] [--iters N] ...
// Replays one recorded iteration and reports it next to the original.
#include <cmath>
#include <deque>
#include <filesystem>
#include <future>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/base/file_io.h"
#include "core/base/log.h"
#include "core/kineto/kineto_linker.h"
#include "core/tools/tool_main.h"
#include "core/trace_io.h"
#include "replayer/original_meta.h"
#include "replayer/op_libraries.h"
#include "replayer/original_metrics.h"
#include "replayer/replay_flags.h"
#include "replayer/replayer.h"
#include "replayer/report_outputs.h"
#include "replayer/timed_trace.h"

namespace {
using namespace etb;

struct Flags {
  std::string trace;
  replay::RunFlags run;
};

// The shared run flags (replayer/replay_flags.h) as CLI11 options. The
// table's check (applyFlag, as generated programs run it) is the one that
// decides and sets: once per value, at parse time, on the flags the replay
// uses, so a bad value fails the parse with exit 2. CLI11's IsMember and
// Range, made from the same table entry and run before it, only word the
// help ("TEXT:{mpi,gloo,nccl}", "INT in [-1 - 1000]") and the message for a
// value outside them, as et_replay has always said it.
struct RawFlags {  // what CLI11 binds the shared flags to; RunFlags gets the values
  std::deque<std::string> one;
  std::deque<std::vector<std::string>> many;
};

void addRunFlags(CLI::App& app, RawFlags& raw, replay::RunFlags& flags) {
  const replay::RunFlags defaults;
  for (const replay::FlagSpec& s : replay::replayFlags()) {
    if (*s.type == '\0') {
      app.add_flag(s.name, s.help);
      continue;
    }
    CLI::Option* o = s.repeatable ? app.add_option(s.name, raw.many.emplace_back(), s.help)
                                  : app.add_option(s.name, raw.one.emplace_back(), s.help);
    o->type_name(s.type);
    if (s.delimiter != 0) o->delimiter(s.delimiter);
    if (!s.choices.empty()) o->check(CLI::IsMember(s.choices));
    if (s.ranged && s.lo == 0 && std::isinf(s.hi)) {
      o->check(CLI::NonNegativeNumber);
    } else if (s.ranged && std::string(s.type) == "INT") {  // help: "INT in [-1 - 1000]"
      o->check(CLI::Range(static_cast<int>(s.lo), static_cast<int>(s.hi)));
    } else if (s.ranged) {
      o->check(CLI::Range(s.lo, s.hi));
    }
    o->check(CLI::Validator(
        [&s, &flags](std::string& v) {
          try {
            replay::applyFlag(s, flags, v);
          } catch (const InputError& e) {
            // CLI11 puts the flag's name in front itself.
            const std::string m = e.what(), own = std::string(s.name) + ": ";
            return m.rfind(own, 0) == 0 ? m.substr(own.size()) : m;
          }
          return std::string();
        },
        ""));
    if (s.shown) o->default_str(s.shown(defaults));
  }
  app.get_option("--original-meta")->excludes(app.get_option("--original-ms"));
}

// The switches (no value to check): set after the parse.
void applySwitches(const CLI::App& app, replay::RunFlags& f) {
  for (const replay::FlagSpec& s : replay::replayFlags()) {
    if (*s.type == '\0' && app.get_option(s.name)->count() > 0) replay::applyFlag(s, f, "");
  }
}

void addFlags(CLI::App& app, Flags& f, RawFlags& raw) {
  app.add_option("trace", f.trace,
                 "PyTorch ET / Chakra trace; per rank: bench.%d.et, bench.rank%d.json or a folder")
      ->required();
  addRunFlags(app, raw, f.run);
}

// One trace for every rank, or one per rank (the count must match).
std::string pickTrace(const std::string& pattern, int rank, int world) {
  const std::vector<std::string> paths = trace::expandRankPaths(pattern);
  if (paths.size() == 1) return paths[0];
  if (static_cast<int>(paths.size()) != world) {
    ETB_INPUT_ERROR(SourceLoc{pattern}, paths.size(), " per-rank traces found but the job has ",
                    world, " ranks");
  }
  return paths[static_cast<size_t>(rank)];
}

// This rank's file of a per-rank input ("k_%d.json.gz" -> "k_3.json.gz");
// without %d every rank reads the same file.
std::string pickRankFile(const std::string& pattern, const char* flag, int rank, int world) {
  if (pattern.find("%d") == std::string::npos) {
    if (world > 1) {
      ETB_LOG(kWarn) << flag << " " << pattern << ": one file for " << world
                     << " ranks; give a per-rank pattern with %d to compare each rank with its own";
    }
    return pattern;
  }
  const std::string path = rankFile(pattern, static_cast<size_t>(rank));
  if (!std::filesystem::exists(path)) {
    ETB_INPUT_ERROR(SourceLoc{path}, flag, " ", pattern, ": no file for rank ", rank);
  }
  return path;
}

// The trace, read on a thread of its own. The streamed reader's workers free
// what the reading thread allocated whenever they get to it, so read on the
// main thread it leaves glibc's main heap laid out by the workers' timing:
// where small blocks sit decides where the heap can be trimmed, so the same
// replay then faulted 200 times per iteration in one run and 1,800 in the
// next (mlp). Off the main heap, the replayed ops start from the same heap
// every run (tests/replayer/heap_repeatable.sh).
trace::Trace readOffMainHeap(const std::string& path) {
  return std::async(std::launch::async, [&] { return trace::readTrace(path); }).get();
}

int replayMain(const CLI::App& app, Flags& flags, int argc, char** argv) {
  replay::RunFlags& f = flags.run;
  applySwitches(app, f);
  replay::applyLogLevel(f);
  for (int i = 0; i < argc; ++i) f.options.argv.push_back(argv[i]);
  replay::CommOptions copts;
  copts.device = f.options.device.empty() ? "cpu" : f.options.device;
  copts.timeout_s = f.comm_timeout;
  copts.backend = f.comm;
  replay::checkCommBackend(copts);  // before MPI: a build without gloo says so at once
  // MPI first (ranks, per-rank files, pre-flight); the trace then names the backend.
  replay::CommOptions control = copts;
  control.backend = "mpi";
  control.device = "cpu";
  std::unique_ptr<replay::Communicator> comm = replay::makeCommunicator(control);
  setLogRank(comm->rank());
  try {
    replay::loadOpLibraries(f.libraries);
    trace::Trace t = readOffMainHeap(pickTrace(flags.trace, comm->rank(), comm->worldSize()));
    if (!f.kineto.empty()) {
      trace::linkKineto(t, pickRankFile(f.kineto, "--kineto", comm->rank(), comm->worldSize()));
      f.options.original_source = "kineto";
    }
    if (!f.original_meta.empty()) replay::useOriginalMeta(f.original_meta, f.options, comm->rank());
    if (!f.original_ms.empty()) replay::useMeasuredOriginal(f.original_ms, f.options);
    comm = replay::switchCommBackend(comm, replay::pickCommBackend(t, copts), copts);
    // Each rank's own sidecar: beside its trace, or from a %d pattern.
    const std::string metrics =
        f.original_metrics.empty()
            ? replay::metricsBesideTrace(t.path)
            : pickRankFile(f.original_metrics, "--original-metrics", comm->rank(), comm->worldSize());
    if (!metrics.empty()) f.options.original_system = replay::readOriginalMetrics(metrics);
    replay::ReplayDiagnostics diag;
    replay::ReplayResult r = replay::replayTrace(t, f.options, *comm, &diag);
    for (const std::string& m : diag.output_mismatches) ETB_LOG(kWarn) << m;
    if (!diag.device_dependent.empty()) {
      ETB_LOG(kInfo) << diag.device_dependent.size()
                     << " output shape(s) differ from the recording because it ran on another "
                        "device (the kernel's choice, not a replay fault), e.g. "
                     << diag.device_dependent.front();
    }
    const bool own_file = f.timed_trace.find("%d") != std::string::npos;
    if (!f.timed_trace.empty() && (own_file || comm->rank() == 0)) {
      const auto s = replay::writeTimedTrace(t, r, f.timed_trace, comm->rank());
      ETB_LOG(kInfo) << "timed trace: " << s.timed << " nodes with measured times, " << s.skipped
                     << " skipped ops without";
    }
    if (comm->rank() != 0) return 0;
    replay::writeReports(r, {!f.quiet, f.report_json, f.report_html, f.chrome_trace}, std::cout);
    // Mismatches are logged either way; --verify makes them the exit status.
    return f.options.verify_outputs && !diag.output_mismatches.empty() ? 1 : 0;
  } catch (const std::exception& e) {
    // One failing rank must not leave the others hanging in a collective.
    if (comm && comm->worldSize() > 1) {
      comm->abortJob(std::string("et_replay: error: ") + e.what(),
                     dynamic_cast<const InputError*>(&e) ? 2 : 1);
    }
    throw;
  }
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Replay a recorded training iteration through libtorch", "et_replay"};
  Flags flags;
  RawFlags raw;
  addFlags(app, flags, raw);
  return runTool(app, argc, argv, [&] { return replayMain(app, flags, argc, argv); });
}
