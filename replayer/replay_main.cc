// SPDX-License-Identifier: MIT
//
// et_replay TRACE [--kineto K] [--device cpu|cuda] [--comm mpi|gloo|nccl] [--iters N] ...
// Replays one recorded iteration and reports it next to the original.
#include <filesystem>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/base/log.h"
#include "core/kineto/kineto_linker.h"
#include "core/tools/tool_main.h"
#include "core/trace_io.h"
#include "replayer/original_meta.h"
#include "replayer/op_libraries.h"
#include "replayer/original_metrics.h"
#include "replayer/replayer.h"
#include "replayer/report_outputs.h"
#include "replayer/timed_trace.h"

namespace {
using namespace etb;

struct Flags {
  std::string trace, kineto, report_json, report_html, chrome_trace, log_level, timed_trace, comm;
  std::vector<double> original_ms;
  std::string original_meta;
  std::string host_time = "off", heap = "glibc", autograd = "off", original_metrics;
  std::vector<std::string> libraries;
  double comm_timeout = 0;
  bool quiet = false;
  replay::ReplayOptions options;
};

void addFlags(CLI::App& app, Flags& f) {
  app.add_option("trace", f.trace,
                 "PyTorch ET / Chakra trace; per rank: bench.%d.et, bench.rank%d.json or a folder")
      ->required();
  app.add_option("--kineto", f.kineto,
                 "profiler (Kineto) trace of the same run: original times; per rank: k_%d.json.gz");
  app.add_option("--comm", f.comm,
                 "collectives on mpi, gloo or nccl (default: the backend the trace's process "
                 "groups recorded when built in, else mpi; nccl for --device cuda)")
      ->check(CLI::IsMember({"mpi", "gloo", "nccl"}));
  auto* oms = app.add_option("--original-ms", f.original_ms,
                             "measured original iteration time(s) in ms, comma-separated")
                  ->delimiter(',');
  app.add_option("--original-meta", f.original_meta,
                 "a fleet sample's meta.json: its unprofiled original (and its threads)")
      ->excludes(oms);
  app.add_option("--device", f.options.device, "cpu or cuda[:N] (default: the trace's if usable)");
  app.add_option("--device-op-iters", f.options.device_op_iters,
                 "on cuda: iterations after the measured ones with CUDA events around every op "
                 "call, for each op's device time (median over them; -1 = 3; ignored on cpu)")
      ->check(CLI::Range(-1, 1000))
      ->capture_default_str();
  app.add_option("--threads", f.options.threads, "intra-op threads (0 = libtorch default)");
  app.add_option("--warmup", f.options.warmup, "warm-up iterations")->capture_default_str();
  app.add_option("--iters", f.options.iters, "measured iterations")->capture_default_str();
  app.add_option("--iteration", f.options.iteration, "recorded iteration (ProfilerStep) to replay")
      ->capture_default_str();
  app.add_option("--index-dist", f.options.index_dist, "index tensors: uniform or zipf:ALPHA")
      ->capture_default_str();
  app.add_option("--seed", f.options.seed, "seed for tensor data")->capture_default_str();
  app.add_option("--host-time", f.host_time,
                 "off: time the ops alone; emulate: also time iterations with the original's "
                 "host time between ops (from --kineto, less the profiler's cost measured here)")
      ->check(CLI::IsMember({"off", "emulate"}))
      ->capture_default_str();
  app.add_option("--host-stall-us", f.options.host_stall_us,
                 "with --host-time emulate: an eventless stretch of a profiled gap longer than "
                 "this counts as this long (the recording was preempted); 0 = no limit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--heap", f.heap,
                 "glibc: the heap as this process's malloc sets it; match: set glibc's mmap and "
                 "trim thresholds so that page faults per iteration come near the original's "
                 "(metrics sidecar), searched over 25 iterations after the first")
      ->check(CLI::IsMember({"glibc", "match"}))
      ->capture_default_str();
  app.add_option("--autograd", f.autograd,
                 "off: every op on plain tensors; record: the forward's ops build autograd's graph "
                 "over parameters that require grad, as the original's did (the backward's and "
                 "the optimizer's ops run under no_grad)")
      ->check(CLI::IsMember({"off", "record"}))
      ->capture_default_str();
  app.add_option("--original-metrics", f.original_metrics,
                 "the original's system metrics (recorder sidecar; default: <stem>.metrics.json "
                 "beside the trace)");
  app.add_option("--load-library", f.libraries,
                 "operator library to load first, as torch.ops.load_library (torchvision's _C.so "
                 "for torchvision:: ops); repeatable");
  app.add_flag("--verify", f.options.verify_outputs,
               "check replayed outputs' shapes/dtypes/strides against the trace");
  app.add_option("--report-json", f.report_json, "write the report as JSON");
  app.add_option("--report-html", f.report_html, "write a self-contained HTML report");
  app.add_option("--chrome-trace", f.chrome_trace, "write the replay timeline (Perfetto)");
  app.add_option("--comm-timeout", f.comm_timeout, "seconds any one collective may take (0 = none)");
  app.add_option("--write-timed-trace", f.timed_trace,
                 "write the trace back with each op's median replay time (.et for a "
                 "simulator; %d = rank)");
  app.add_option("--log-level", f.log_level, "debug, info, warn, error");
  app.add_flag("--quiet", f.quiet, "no terminal report");
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
  const size_t at = pattern.find("%d");
  if (at == std::string::npos) {
    if (world > 1) {
      ETB_LOG(kWarn) << flag << " " << pattern << ": one file for " << world
                     << " ranks; give a per-rank pattern with %d to compare each rank with its own";
    }
    return pattern;
  }
  std::string path = pattern;
  path.replace(at, 2, std::to_string(rank));
  if (!std::filesystem::exists(path)) {
    ETB_INPUT_ERROR(SourceLoc{path}, flag, " ", pattern, ": no file for rank ", rank);
  }
  return path;
}

int replayMain(Flags& f, int argc, char** argv) {
  LogLevel level;
  if (!f.log_level.empty()) {
    if (!parseLogLevel(f.log_level.c_str(), &level)) {
      ETB_INPUT_ERROR(SourceLoc{"--log-level"}, "unknown level \"", f.log_level, "\"");
    }
    setLogLevel(level);
  }
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
    trace::Trace t = trace::readTrace(pickTrace(f.trace, comm->rank(), comm->worldSize()));
    if (!f.kineto.empty()) {
      trace::linkKineto(t, pickRankFile(f.kineto, "--kineto", comm->rank(), comm->worldSize()));
      f.options.original_source = "kineto";
    }
    if (!f.original_meta.empty()) replay::useOriginalMeta(f.original_meta, f.options, comm->rank());
    if (!f.original_ms.empty()) replay::useMeasuredOriginal(f.original_ms, f.options);
    comm = replay::switchCommBackend(comm, replay::pickCommBackend(t, copts), copts);
    f.options.emulate_host = f.host_time == "emulate";
    f.options.match_heap = f.heap == "match";
    f.options.record_autograd = f.autograd == "record";
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
    return diag.output_mismatches.empty() ? 0 : 1;
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
  addFlags(app, flags);
  return runTool(app, argc, argv, [&] { return replayMain(flags, argc, argv); });
}
