// SPDX-License-Identifier: MIT
#include "replayer/replayer.h"

#include <ATen/Parallel.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>

#include "core/base/error.h"
#include "core/base/log.h"
#include "etb/config.h"
#include "replayer/autograd_record.h"
#include "replayer/device_time.h"
#include "replayer/executor.h"
#include "replayer/heap_match.h"
#include "replayer/host_plan.h"
#include "replayer/host_probe.h"
#include "replayer/op_plan.h"
#include "replayer/op_selection.h"
#include "replayer/report_json.h"
#include "replayer/result_builder.h"
#include "replayer/system_metrics.h"
#include "replayer/threads.h"
#include "replayer/timer.h"

namespace etb::replay {
namespace {

// The trace's first tensor device, e.g. "cuda:0"; "" when none is recorded.
std::string traceDevice(const trace::Trace& t) {
  for (const trace::TensorRef& r : t.tensors) {
    if (r.has_device && !t.str(r.device).empty()) return std::string(t.str(r.device));
  }
  return "";
}

at::Device replayDevice(const trace::Trace& t, const std::string& asked) {
  std::string dev = asked;
  if (dev.empty()) {
    const std::string recorded = traceDevice(t);
    dev = recorded.rfind("cuda", 0) == 0 && at::hasCUDA() ? "cuda" : "cpu";
  }
  if (dev != "cpu" && dev.rfind("cuda", 0) != 0) {
    ETB_INPUT_ERROR(SourceLoc{"--device"}, "unknown device \"", dev, "\" (cpu or cuda[:N])");
  }
  if (dev.rfind("cuda", 0) == 0 && !at::hasCUDA()) {
    ETB_INPUT_ERROR(SourceLoc{"--device"}, "device ", dev,
                    " asked for, but this libtorch has no CUDA (use --device cpu)");
  }
  // Each rank on its own GPU, as the NCCL communicator picks it: every rank
  // on cuda:0 put their tensors where other ranks' NCCL could not use them.
  if (dev == "cuda") {
    const int devices = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->deviceCount();
    dev = rankDevice(dev, launcherLocalRank(), devices);
  }
  return at::Device(dev);
}

void recordAutograd(const trace::Trace& trace, detail::Plan& plan) {
  const detail::AutogradRecording r = detail::planAutogradRecording(trace, plan);
  plan.coverage.autograd_forward_ops = static_cast<int64_t>(r.forward_steps);
  plan.coverage.autograd_parameters = r.parameters;
  plan.coverage.autograd_none = r.none_because;
  if (r.none_because.empty()) {
    ETB_LOG(kInfo) << "autograd: " << r.forward_steps << " forward ops record over "
                   << r.parameters << " parameters";
  } else {
    ETB_LOG(kWarn) << "--autograd record: nothing recorded: " << r.none_because;
  }
}

std::string hostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

RankResult rankResult(const ReplayResult& r, const std::vector<detail::IterationRecord>& recs,
                      int rank) {
  RankResult rr;
  rr.rank = rank;
  rr.host = r.host;
  rr.iter_ms = r.replay_iter_ms;
  std::vector<double> busy, exposed;
  for (const auto& rec : recs) {
    busy.push_back(rec.comm.busy_us / 1e3);
    exposed.push_back(rec.comm.exposed_us / 1e3);
    rr.comm_bytes = rec.comm.bytes;
  }
  rr.comm_ms = summarize(busy).median;
  rr.exposed_comm_ms = summarize(exposed).median;
  if (r.original_iter_ms) rr.original_ms = r.original_iter_ms->median;
  if (r.host_time) rr.with_host_ms = r.host_time->with_host_iter_ms.median;
  if (r.original_system) {
    rr.original_cpu_util_pct = r.original_system->metrics.cpu_util_pct;
    rr.original_peak_rss_bytes = r.original_system->metrics.peak_rss_bytes;
  }
  rr.system = r.system;
  rr.operators = r.coverage.operators;
  rr.replayed = r.coverage.replayed;
  rr.comms = r.coverage.comms;
  rr.comms_replayed = r.coverage.comms_replayed;
  return rr;
}

// Runs `f` on one rank at a time, the others asleep in a barrier (a rank
// spinning in MPI_Barrier would take the core it shares). The host-time
// calibrations time the profiler's cost per event; ranks oversubscribing a
// node's cores would measure each other (4 ranks on 2 cores: 9 to 23 us per
// event on the same trace, against 7.5-8.5 on every rank one at a time).
template <class F>
void oneRankAtATime(Communicator& comm, F&& f) {
  if (comm.worldSize() == 1) return f();
  for (int r = 0; r < comm.worldSize(); ++r) {
    if (r == comm.rank()) f();
    comm.sleepingBarrier();
  }
}

// The iterations run with device events around every op call, after the
// measured ones (the events cost host time). Collectives stay host-timed:
// they run on the backend's own stream.
std::vector<detail::IterationRecord> deviceTimedIterations(detail::Executor& exec,
                                                           const DeviceSync& sync,
                                                           const at::Device& device,
                                                           const ReplayOptions& o) {
  std::vector<detail::IterationRecord> timed;
  if (!sync.timesDevice()) return timed;
  const int n = o.device_op_iters < 0 ? 3 : o.device_op_iters;
  // c10's device-generic guard gives stream ids, not handles: enough to see
  // that the ops run on the default stream, where the events go.
  const c10::impl::DeviceGuardImplInterface* guard = c10::impl::getDeviceGuardImpl(device.type());
  if (n > 0 && guard->getStream(device) != guard->getDefaultStream(device)) {
    ETB_LOG(kWarn) << "device time per op: libtorch's current stream is not its default "
                      "stream; the events on the default stream may not bracket the ops";
  }
  exec.setDeviceTiming(true);
  for (int i = 0; i < n; ++i) timed.push_back(exec.runIteration(false, nullptr));
  exec.setDeviceTiming(false);
  return timed;
}

// A collective the trace counts but cannot size (no comm info) is not run:
// each is named with the reader's reason (collectives n/m in the report).
void warnUnreplayedComms(const trace::Trace& trace, const detail::Plan& plan) {
  for (const detail::PlanStep& step : plan.steps) {
    if (!step.is_comm || step.runnable) continue;
    const trace::Node& n = trace.nodes[step.node];
    std::string why = "no communication info recorded";
    for (const trace::Repair& r : trace.repairs) {
      if (r.node_id == n.id) why = r.what;
    }
    ETB_LOG(kWarn) << trace.path << ": node " << n.id << " " << step.name
                   << ": collective not replayed: " << why;
  }
}

// Warm-up iterations beyond the counted ones until `min_s` seconds have
// passed since `start_us`, in rounds sized by the last round's iteration
// time (one iteration first); each round every rank runs the largest count
// any rank asks for, so all run the same iterations. Returns how many.
int warmUpFor(detail::Executor& exec, Communicator& comm, double start_us, double min_s) {
  constexpr double kMaxRound = 1e5;
  int64_t added = 0;  // an hour of microsecond iterations passes INT_MAX
  double per_iter_us = 0;  // unknown until a round ran
  for (;;) {
    const double left_us = start_us + min_s * 1e6 - nowUs();
    double want = 0;
    if (left_us > 0) {
      want = per_iter_us > 0 ? std::min(std::ceil(left_us / per_iter_us), kMaxRound) : 1;
    }
    const int n = static_cast<int>(comm.maxOverRanks(want));
    if (n <= 0) {
      return static_cast<int>(std::min<int64_t>(added, std::numeric_limits<int>::max() / 2));
    }
    const double t0 = nowUs();
    for (int i = 0; i < n; ++i) exec.recycle(exec.runIteration(false, nullptr));
    per_iter_us = std::max((nowUs() - t0) / n, 1.0);
    added += n;
  }
}

// The measured iterations --min-iters-s asks for, --iters' having taken
// `per_iter_us` each (a host-time replay's pair included): as many as fill
// it, at most 10,000 more and 2 million op records in all (five doubles
// each), the most any rank asks for.
int measuredIterations(const ReplayOptions& o, Communicator& comm, double per_iter_us, size_t steps) {
  const double most = std::min(1e4, 2e6 / static_cast<double>(std::max<size_t>(steps, 1)));
  const double want = std::min(std::ceil(o.min_iters_s * 1e6 / std::max(per_iter_us, 1.0)), o.iters + most);
  const int n = std::max(o.iters, static_cast<int>(comm.maxOverRanks(want)));
  if (n > o.iters) {
    ETB_LOG(kInfo) << "measured: " << n << " iterations (" << n - o.iters
                   << " added so that they last --min-iters-s " << o.min_iters_s << ")";
  }
  return n;
}

void gatherRanks(Communicator& comm, ReplayResult& r, const RankResult& mine) {
  const std::vector<std::string> all = comm.gatherToRoot(rankResultToJson(mine));
  for (const std::string& text : all) r.ranks.push_back(rankResultFromJson(text));
  if (r.ranks.empty()) r.ranks.push_back(mine);
}
}  // namespace

double parseIndexDist(const std::string& text) {
  if (text == "uniform") return 0;
  if (text.rfind("zipf:", 0) == 0) {
    char* end = nullptr;
    const double a = std::strtod(text.c_str() + 5, &end);
    if (end != nullptr && *end == '\0' && a > 0) return a;
  }
  ETB_INPUT_ERROR(SourceLoc{"--index-dist"}, "expected uniform or zipf:ALPHA (ALPHA > 0), got \"",
                  text, "\"");
}

ReplayResult replayTrace(const trace::Trace& trace, const ReplayOptions& options,
                         Communicator& comm, ReplayDiagnostics* diag) {
  if (options.iters < 1 || options.warmup < 0) {
    ETB_INPUT_ERROR(SourceLoc{"--iters"}, "need --iters >= 1 and --warmup >= 0");
  }
  if (!(options.min_warmup_s >= 0)) {
    ETB_INPUT_ERROR(SourceLoc{"--min-warmup-s"}, "need >= 0, got ", options.min_warmup_s);
  }
  if (!(options.min_iters_s >= 0)) {
    ETB_INPUT_ERROR(SourceLoc{"--min-iters-s"}, "need >= 0, got ", options.min_iters_s);
  }
  if (options.threads > 0) setIntraOpThreads(options.threads);
  setFlushDenormal(!options.keep_denormals);
  // Measured before any replay state exists: it switches the ET observer and
  // the profiler on and off.
  std::optional<ProfilerCost> cost;
  if (options.emulate_host) oneRankAtATime(comm, [&] { cost = measureProfilerCost(); });
  detail::PlanOptions popts;
  popts.device = replayDevice(trace, options.device);
  popts.zipf_alpha = parseIndexDist(options.index_dist);
  popts.seed = options.seed;
  const trace::Iteration it = chooseIteration(trace, options.iteration);
  const std::vector<SelectedNode> selected = selectNodes(trace, it);
  if (selected.empty()) {
    ETB_INPUT_ERROR(SourceLoc{trace.path}, "no operators to replay in ", it.name);
  }
  comm.prepare(trace);
  detail::Plan plan = detail::buildPlan(trace, selected, popts);
  if (options.record_autograd) recordAutograd(trace, plan);
  // Prepared here to refuse a trace without profiler times before replaying;
  // again after the warm-up with the cost measured on the replay's ops.
  std::optional<detail::HostPlan> host;
  if (cost) host = detail::prepareHostPlan(trace, it, selected, plan, *cost, options.host_stall_us);
  ETB_LOG(kInfo) << "replaying " << plan.steps.size() << " nodes of " << it.name << " on "
                 << popts.device.str() << " (" << plan.coverage.skipped << " skipped)";
  warnUnreplayedComms(trace, plan);
  if (plan.leaf_layouts_derived > 0) {
    ETB_LOG(kInfo) << plan.leaf_layouts_derived
                   << " unstrided leaf views laid out by the view op that made them";
  }
  auto sync = makeDeviceSync(popts.device.str());
  detail::Executor exec(trace, plan, comm, *sync);
  const int64_t state_bytes = options.carry_state ? 0 : exec.keepStartState(popts);
  if (state_bytes > 0) {
    ETB_LOG(kInfo) << "leaves that ops update in place (" << state_bytes / 1024
                   << " KiB) are drawn again before each iteration (--state reset)";
  }
  // The first iteration checks outputs and follows memory; warm-up when
  // there is one, so the measured iterations carry no checking cost.
  // Warm-up iterations after the first measure the replay's own time between
  // ops for the host-time emulation.
  // The heap is matched right after the first iteration, before the replay's
  // own time between ops is measured (frees that unmap fall there).
  std::optional<HeapMatch> heap;
  const auto matchHeap = [&] {
    if (!options.match_heap || heap) return;
    const double target = options.original_system
                              ? options.original_system->metrics.minor_faults_per_iter
                              : -1;
    heap = matchHeapFaults(target, [&] { exec.recycle(exec.runIteration(false, nullptr)); });
  };
  std::vector<detail::IterationRecord> untracked, fault_counted;
  untracked.reserve(static_cast<size_t>(options.warmup));
  fault_counted.reserve(static_cast<size_t>(options.warmup));
  // Every record now, before the first iteration (Executor::reserveRecords).
  exec.reserveRecords(static_cast<size_t>(options.warmup + options.iters * (host ? 2 : 1)));
  const double warmup_start = nowUs();
  for (int i = 0; i < options.warmup; ++i) {
    // Host-time emulation measures the replay's own gaps in these: no
    // fault counting there (two system calls per step).
    exec.setCountFaults(i > 0 && !host);
    detail::IterationRecord rec = exec.runIteration(i == 0, i == 0 ? diag : nullptr);
    if (i == 0) matchHeap();
    if (i > 0 && host) untracked.push_back(std::move(rec));
    else if (i > 0) fault_counted.push_back(std::move(rec));
  }
  exec.setCountFaults(false);
  if (options.warmup == 0) matchHeap();
  const int warmup_added =
      options.warmup > 0 ? warmUpFor(exec, comm, warmup_start, options.min_warmup_s) : 0;
  const double warmup_ms = (nowUs() - warmup_start) * 1e-3;
  if (warmup_added > 0) {
    ETB_LOG(kInfo) << "warm-up: " << options.warmup + warmup_added << " iterations in "
                   << static_cast<int>(warmup_ms) << " ms (" << warmup_added
                   << " added so that it lasts --min-warmup-s " << options.min_warmup_s << ")";
  }
  if (host) {
    std::optional<ProfilerCost> here;
    // Every rank calibrates in its own child, collectives off (the child
    // must not talk to the other ranks).
    if (popts.device.is_cpu() && at::get_num_threads() == 1) {
      oneRankAtATime(comm, [&] { here = detail::calibrateInChild(exec, plan, *cost); });
    }
    if (!here) {
      ETB_LOG(kInfo) << "host time: instrumentation cost from the start-up loop only (measured "
                        "on the replay's ops on CPU with one thread)";
    }
    const ProfilerCost measured = here.value_or(*cost);
    ProfilerCost used = measured;
    if (options.recorded_instrumentation) {
      used = withRecordingCost(measured, *options.recorded_instrumentation);
      ETB_LOG(kInfo) << "host time: the recording's instrumentation cost (meta.json): "
                     << used.per_event_us << " us per op event, " << used.per_label_us
                     << " us per label event (measured here: " << measured.per_event_us << ", "
                     << measured.per_label_us << ")";
    }
    host = detail::prepareHostPlan(trace, it, selected, plan, used, options.host_stall_us);
    host->cost_from_recording = options.recorded_instrumentation.has_value();
  }
  comm.clearCollectiveStats();
  SystemSampler sampler(popts.device.is_cuda() ? popts.device.index() : 0);
  sampler.start();
  std::vector<detail::IterationRecord> records, host_records;
  records.reserve(static_cast<size_t>(options.iters));
  if (host) host_records.reserve(static_cast<size_t>(options.iters));
  // --speed-probe: the host's speed on each side of each measured
  // iteration, every rank in turn (ranks sharing a core would time each
  // other), the slowest rank's.
  std::vector<double> probes;
  const auto probe = [&] {
    double us = 0;
    oneRankAtATime(comm, [&] { us = hostProbeUs(); });
    probes.push_back(comm.maxOverRanks(us));
  };
  if (options.speed_probe) probe();
  // --iters iterations, then (--min-iters-s) as many more as their time
  // per iteration says fill it, the records for those sized in between.
  int iters = options.iters;
  const double measure_start = nowUs();
  for (int i = 0;; ++i) {
    if (i == iters) {
      if (i != options.iters || !(options.min_iters_s > 0)) break;
      iters = measuredIterations(options, comm, (nowUs() - measure_start) / options.iters, plan.steps.size());
      if (iters == i) break;
      exec.reserveRecords(static_cast<size_t>(iters - options.iters) * (host ? 2 : 1));
      records.reserve(static_cast<size_t>(iters));
      if (host) host_records.reserve(static_cast<size_t>(iters));
    }
    const bool first = options.warmup == 0 && i == 0;
    records.push_back(exec.runIteration(first, first ? diag : nullptr));
    if (options.speed_probe) probe();
    if (!host) continue;
    if (i == 0) detail::subtractReplayGaps(*host, untracked.empty() ? records : untracked);
    // Alternating with the ops-only iterations, so both see the same machine.
    exec.setHostGaps(host->before_us, host->after_us);
    host_records.push_back(exec.runIteration(false, nullptr));
    exec.setHostGaps({}, 0);
  }
  sampler.stop();
  const std::vector<detail::IterationRecord> device_timed = deviceTimedIterations(exec, *sync, popts.device, options);

  ReplayResult r;
  r.argv = options.argv;
  r.trace_path = trace.path;
  r.schema = trace.schema;
  r.device = popts.device.str();
  r.threads = at::get_num_threads();
  r.warmup = options.warmup + warmup_added;
  r.warmup_ms = warmup_ms;
  r.state = options.carry_state ? "carry" : "reset";
  r.denormals = options.keep_denormals ? "keep" : "flush";
  r.state_reset_bytes = state_bytes;
  r.iters = iters;
  r.world_size = comm.worldSize();
  r.host = hostName();
  r.etbench_version = ETB_VERSION;
  r.torch_version = TORCH_VERSION;
  r.comm_backend = comm.backendName();
  r.original_source = options.original_source;
  detail::fillResult(trace, it, plan, records, comm.worldSize(), r);
  for (size_t i = 0; i + 1 < probes.size(); ++i) r.speed_probe_us.push_back(std::max(probes[i], probes[i + 1]));
  if (comm.rank() != 0) {  // rank 0's report counts this rank's skips; they are named here
    for (const auto& [reason, n] : r.coverage.skipped_by_reason) {
      ETB_LOG(kWarn) << trace.path << ": " << n << " op(s) skipped: " << reason;
    }
  }
  detail::fillStepFaults(fault_counted, r);
  detail::fillDeviceTimes(trace, it, plan, device_timed, r);
  if (!options.original_ms.empty()) {
    r.original_iter_ms = summarize(options.original_ms);
    r.original_source = options.original_source.empty() ? "user" : options.original_source;
  }
  // The backend times each call from post to completion and sizes busbw by
  // the call's group; the step times above end at the post of an async call.
  std::vector<CollectiveStat> timed = comm.collectiveStats();
  if (!timed.empty()) r.collectives = std::move(timed);
  for (TimelineEvent& e : r.timeline) e.rank = comm.rank();
  r.system = sampler.metrics();
  r.system.peak_tensor_bytes = exec.peakBytes();
  if (const size_t runs = records.size() + host_records.size(); runs > 0) {
    r.system.minor_faults_per_iter =
        static_cast<double>(sampler.minorFaults()) / static_cast<double>(runs);
  }
  if (host) r.host_time = detail::hostTimeResult(*host, host_records);
  r.heap = heap;
  r.original_system = options.original_system;
  gatherRanks(comm, r, rankResult(r, records, comm.rank()));
  return r;
}

}  // namespace etb::replay
