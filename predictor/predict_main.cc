// SPDX-License-Identifier: MIT
//
// et_predict TRACE --hw hw.json [--comm mpi|gloo] [--kineto K] [--report-json R] ...
// Predicts one iteration of a trace (per-rank patterns and folders as
// et_replay takes them) on the machine a profile describes, without running
// any of its ops. --write-chakra writes the trace set back as Chakra with
// the predicted duration_micros, for a network simulator.
#include <sched.h>
#include <torch/version.h>

#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/kineto/kineto_linker.h"
#include "core/tools/tool_main.h"
#include "core/trace_io.h"
#include "predictor/heap_model.h"
#include "predictor/hw_bench.h"
#include "replayer/heap_match.h"
#include "replayer/original_metrics.h"
#include "replayer/threads.h"
#include "predictor/predict_report.h"
#include "predictor/predictor.h"
#include "predictor/timing.h"

namespace {
using namespace etb;

// CPUs this process may run on (taskset, cgroups); ranks launched the same
// way get the same ones.
int allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

struct Flags {
  std::string trace, hw, kineto, report_json, report_html, write_chakra;
  std::string faults = "model", original_metrics, speed = "profile";
  bool quiet = false;
  predict::PredictOptions options;
};

std::vector<trace::Trace> readAll(const Flags& f) {
  std::vector<trace::Trace> traces;
  for (const std::string& path : trace::expandRankPaths(f.trace)) traces.push_back(trace::readTrace(path));
  if (!f.kineto.empty()) {
    const std::vector<std::string> ks = trace::expandRankPaths(f.kineto);
    if (ks.size() != traces.size()) {
      ETB_INPUT_ERROR(SourceLoc{f.kineto}, ks.size(), " profiler files for ", traces.size(), " traces");
    }
    for (size_t i = 0; i < ks.size(); ++i) trace::linkKineto(traces[i], ks[i]);
  }
  return traces;
}

// --faults original: each rank's original minor faults per step, from its
// metrics sidecar (--original-metrics, a %d pattern per rank, or the file
// beside each trace).
std::vector<double> originalFaults(const Flags& f) {
  const std::vector<std::string> traces = trace::expandRankPaths(f.trace);
  std::vector<std::string> files;
  if (!f.original_metrics.empty()) {
    files = trace::expandRankPaths(f.original_metrics);
    if (files.size() != 1 && files.size() != traces.size()) {
      ETB_INPUT_ERROR(SourceLoc{f.original_metrics}, files.size(), " metrics files for ",
                      traces.size(), " traces");
    }
  } else {
    for (const std::string& t : traces) {
      files.push_back(replay::metricsBesideTrace(t));
      if (files.back().empty()) {
        ETB_INPUT_ERROR(SourceLoc{t}, "--faults original: no metrics sidecar beside the trace "
                                      "(give --original-metrics)");
      }
    }
  }
  std::vector<double> faults;
  for (const std::string& file : files) {
    const double v = replay::readOriginalMetrics(file).metrics.minor_faults_per_iter;
    if (v < 0) {
      ETB_INPUT_ERROR(SourceLoc{file}, "--faults original: the sidecar has no minor_faults_per_step");
    }
    faults.push_back(v);
  }
  return faults;
}

// Writes `traces` as Chakra with each predicted op's time as its duration.
void writeTimed(std::vector<trace::Trace>& traces, const predict::Prediction& p,
                const std::string& prefix) {
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    trace::Trace& t = traces[traces.size() == 1 ? 0 : r];
    for (const predict::OpPrediction& op : p.ranks[r].ops) {
      if (trace::Node* n = t.find(op.node_id)) n->dur_us = op.us;
    }
    trace::writeTrace(t, prefix + "." + std::to_string(r) + ".et");
  }
}

// --speed now: this machine's slowdown at present, by the profile's own
// guard probe against its fastest. On a shared VM the host's speed moved
// 1.0-2.2x over minutes (2026-12-02: the probe's median 19 us while
// profiling, 25-39 us half an hour later, mlp replayed 78 then 117-121 ms),
// and a prediction at the profile's speed misses by the drift. The probe
// (GEMMs in L1) slows more than a replay does when a neighbour shares the
// core: where the replays ran in the profile's state it overshot (GMAE 14.7%
// against 6.4% at the profile's speed), so it is asked for, not the default.
double slowdownNow(const predict::HwProfile& hw, const Flags& f) {
  if (hw.speed_guard.probe_us <= 0) {
    ETB_INPUT_ERROR(SourceLoc{f.hw}, "speed_guard.probe_us: the profile has no guard probe to "
                                     "compare this machine's speed with (--speed now)");
  }
  if (const std::string cpu = predict::thisCpuModel(); cpu != hw.identity.cpu_model) {
    ETB_INPUT_ERROR(SourceLoc{f.hw}, "identity.cpu_model: profile measured on '",
                    hw.identity.cpu_model, "', this machine is '", cpu,
                    "'; --speed now compares the two machines' probes only on the same CPU");
  }
  replay::setIntraOpThreads(hw.identity.threads);  // as the guard probed
  return std::max(1.0, predict::medianProbeUs(1.0) / hw.speed_guard.probe_us);
}

// --speed X: the slowdown over the profile's fastest probe to predict at,
// as a replay's own probes measured it (et_replay --speed-probe's
// speed_probe_us over the profile's speed_guard.probe_us; 1 = the machine
// undisturbed, as the curves are).
double givenSlowdown(const Flags& f) {
  char* end = nullptr;
  const double x = std::strtod(f.speed.c_str(), &end);
  if (end == f.speed.c_str() || *end != '\0' || !(x >= 1) || !(x <= 100)) {
    ETB_INPUT_ERROR(SourceLoc{"--speed"}, "expected profile, now or a slowdown from 1 to 100 "
                                          "(the host's speed over the profile's fastest probe), got \"",
                    f.speed, "\"");
  }
  return x;
}

int predictMain(Flags& f, int argc, char** argv) {
  // The traces before the profile. et_replay reads the trace with the same
  // reader: its heap starts where ours is after it (on lstm the model
  // charged 1,035 fresh pages per iteration from a new process's
  // thresholds; the replay faulted 120-364). The reader's freed buffers set
  // glibc's mmap threshold: et_replay and et_predict read the same
  // threshold, or one step apart, on every fleet sample (0.4-3 MiB). Read
  // after the profile, it was the profile's: parsing a 271 KB profile left
  // a threshold no small trace's reading reaches (U-Net's and MobileNet's
  // 112 and 736 replayed faults an iteration predicted at none, against
  // 150 and 256 from the same profile written without indentation).
  std::vector<trace::Trace> traces = readAll(f);
  f.options.heap_start_bytes = replay::probeMmapThreshold();
  const predict::HwProfile hw = predict::readProfile(f.hw);
  predict::checkProfileMatches(hw, f.hw, TORCH_VERSION, f.options.device);
  // The host's slowdown (now's probe or a given one) scales CPU ops only.
  if (f.speed != "profile" && f.options.device != "cpu") {
    ETB_INPUT_ERROR(SourceLoc{"--speed"}, f.speed, ": the host's slowdown scales CPU ops; a ",
                    f.options.device, " prediction's kernels run on the device");
  }
  if (f.speed == "now") {
    f.options.slowdown = slowdownNow(hw, f);
  } else if (f.speed != "profile") {
    f.options.slowdown = givenSlowdown(f);
    f.options.speed_from = "given";
  }
  f.options.profile_path = f.hw;
  if (f.options.cores == 0) f.options.cores = allowedCpus();
  if (f.faults == "original") f.options.original_faults = originalFaults(f);
  std::vector<const trace::Trace*> ptrs;
  for (const trace::Trace& t : traces) ptrs.push_back(&t);
  const predict::Prediction p = predict::predictIteration(ptrs, hw, f.options);
  predict::ReportContext ctx{{argv, argv + argc}, f.trace, f.hw, hw.identity};
  if (!f.quiet) predict::printPrediction(p, ctx, std::cout);
  if (!f.report_json.empty()) predict::writePredictionJson(p, ctx, f.report_json);
  if (!f.report_html.empty()) predict::writePredictionHtml(p, ctx, f.report_html);
  if (!f.write_chakra.empty()) writeTimed(traces, p, f.write_chakra);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Predict a recorded iteration's time from a hardware profile", "et_predict"};
  Flags f;
  app.add_option("trace", f.trace, "PyTorch ET / Chakra trace; per rank: bench.%d.et or a folder")
      ->required();
  app.add_option("--hw", f.hw, "hardware profile from et_profile_hw")->required();
  app.add_option("--kineto", f.kineto, "profiler trace(s) of the same run: host time");
  app.add_option("--iteration", f.options.iteration, "recorded iteration (ProfilerStep)")
      ->capture_default_str();
  app.add_option("--index-dist", f.options.index_dist, "index tensors: uniform or zipf:ALPHA")
      ->capture_default_str();
  app.add_option("--world-size", f.options.world_size, "ranks replaying one trace (0 = one per trace)");
  app.add_option("--device", f.options.device, "device the prediction is for")->capture_default_str();
  app.add_option("--cores", f.options.cores,
                 "cores the ranks share (default: the CPUs this process may run on, as mpirun's "
                 "ranks started the same way would)")
      ->check(CLI::PositiveNumber);
  app.add_option("--comm", f.options.comm,
                 "collectives' backend, as et_replay --comm (default: the one et_replay picks: "
                 "the trace's process groups, else mpi)")
      ->check(CLI::IsMember({"mpi", "gloo", "nccl"}));
  app.add_option("--faults", f.faults,
                 "page faults per iteration: model (the heap model's fresh pages, as a replay's "
                 "own heap takes them) or original (the original's count from its metrics "
                 "sidecar, as et_replay --heap match gives it)")
      ->check(CLI::IsMember({"model", "original"}))
      ->capture_default_str();
  app.add_option("--original-metrics", f.original_metrics,
                 "metrics sidecar(s) for --faults original (a %d pattern per rank; default: "
                 "the one beside each trace)");
  app.add_option("--speed", f.speed,
                 "host speed the CPU ops are predicted at: profile (its typical speed while "
                 "measured), now (this machine's at present, by a second of the profile's "
                 "guard probe; the same CPU model only) or a slowdown over the profile's "
                 "fastest probe (1 = undisturbed; a replay's speed_probe_us over probe_us)")
      ->capture_default_str();
  app.add_option("--report-json", f.report_json, "write the prediction as JSON");
  app.add_option("--report-html", f.report_html, "write a self-contained HTML page");
  app.add_option("--write-chakra", f.write_chakra, "write PREFIX.<rank>.et with predicted durations");
  app.add_flag("--quiet", f.quiet, "no terminal report");
  return runTool(app, argc, argv, [&] { return predictMain(f, argc, argv); });
}
