// SPDX-License-Identifier: MIT
#include "replayer/report_text.h"

#include <algorithm>
#include <iomanip>
#include <string>
#include <vector>

#include "replayer/host_probe.h"
#include "replayer/report_util.h"

namespace etb::replay {
namespace {
using detail::formatBytes;
using detail::formatDuration;
using detail::formatFixed;

// Long op names would push the columns apart; keep the tail, which carries
// the distinguishing part ("...backward").
std::string clip(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return "..." + s.substr(s.size() - (width - 3));
}

void printHeader(const ReplayResult& r, std::ostream& os) {
  const Coverage& c = r.coverage;
  os << "# et_replay " << r.etbench_version << "  trace: " << r.trace_path;
  if (!r.schema.empty()) os << "  (schema " << r.schema << ")";
  os << "\n# device: " << r.device << "  threads: " << r.threads
     << "  warmup: " << r.warmup << " (" << formatFixed(r.warmup_ms, 0) << " ms)  iters: " << r.iters
     << "  ranks: " << r.world_size << "  comm: " << r.comm_backend;
  if (!r.host.empty()) os << "  host: " << r.host;
  os << "\n# coverage: " << c.replayed << "/" << c.operators
     << " operators replayed (" << formatFixed(detail::coveragePct(c), 1)
     << "%), " << c.skipped << " skipped; collectives " << c.comms_replayed
     << "/" << c.comms << "\n";
  for (const RankResult& rank : r.ranks) {  // the other ranks' own traces: their skips too
    if (rank.rank == 0 || (rank.replayed == rank.operators && rank.comms_replayed == rank.comms)) {
      continue;
    }
    os << "#   rank " << rank.rank << ": " << rank.replayed << "/" << rank.operators
       << " operators replayed, " << (rank.operators - rank.replayed) << " skipped; collectives "
       << rank.comms_replayed << "/" << rank.comms << " (reasons in its log)\n";
  }
  if (c.autograd_forward_ops >= 0) {
    if (c.autograd_none.empty()) {
      os << "# autograd: the forward's " << c.autograd_forward_ops << " ops recorded over "
         << c.autograd_parameters << " parameters (the rest under no_grad)\n";
    } else {
      os << "# autograd: nothing recorded: " << c.autograd_none << "\n";
    }
  }
  if (c.fallback_fp32 + c.noop + c.adapted > 0) {
    os << "# of those: " << c.fallback_fp32 << " in float32, " << c.noop << " no-ops, "
       << c.adapted
       << " adapted (data the trace lacks, or ops newer than this libtorch; see the JSON report)\n";
  }
  if (c.nan_outputs > 0) {
    const SkippedOp& first = c.nan_ops.front();
    os << "# NaN: " << c.nan_outputs << " op(s) made NaN from finite inputs (first: node "
       << first.node_id << " " << first.name
       << "); every op after computes on it, and kernels with data-dependent paths time otherwise\n";
  }
  os << "#\n";
}

void printIterationRow(const char* label, const Distribution& d,
                       std::ostream& os) {
  os << std::left << std::setw(12) << label;
  for (double ms : {d.median, d.min, d.max, d.stddev}) {
    os << detail::padLeft(formatDuration(ms * 1e3), 12);
  }
  os << std::right << std::setw(8) << d.samples.size() << "\n";
}

void printHostTime(const ReplayResult& r, std::ostream& os) {
  const HostTime& h = *r.host_time;
  os << "# host time: the original's " << formatDuration(h.original_host_ms * 1e3)
     << " per iteration between and around ops";
  const double share = detail::hostSharePct(r);
  if (share >= 0) os << " = " << formatFixed(share, 1) << "% of the original";
  os << "\n#   emulated " << formatDuration(h.emulated_ms * 1e3)
     << ": the rest is what the replay itself spends between the same ops (it spends "
     << formatDuration(h.replay_between_ms * 1e3) << " between all of them)"
     << "\n#   (profiled gaps " << formatDuration(h.recorded_gap_ms * 1e3)
     << " less the recording's instrumentation, "
     << (h.profiler_cost_from == "recording" ? "as the recording measured it (meta.json): "
                                             : "measured here at ")
     << formatDuration(h.profiler_event_us) << " per op event, "
     << formatDuration(h.profiler_gap_us) << " of it between two ops, "
     << formatDuration(h.profiler_label_us) << " per label event; " << h.boundaries
     << " event boundaries (" << h.label_boundaries << " of labels) in " << h.gaps << " gaps";
  if (h.untimed_ops > 0) os << "; " << h.untimed_ops << " ops without a profiler time";
  os << ")\n";
  if (h.stalls > 0) {
    os << "#   not counted: " << formatDuration(h.stalled_ms * 1e3) << " in " << h.stalls
       << " eventless stretches longer than " << formatDuration(h.stall_limit_us)
       << " (the recording was not running; --host-stall-us)\n";
  }
}

// --speed-probe: how far the host moved under the iterations. The probe
// beside each one over the run's fastest, and the iterations whose probe
// stayed within the speed guard's kDisturbedRatio of it (et_profile_hw
// retries a measurement beyond that): on a shared VM the median can be a
// slowed one.
void printHostSpeed(const ReplayResult& r, std::ostream& os) {
  const std::vector<double>& probes = r.speed_probe_us;
  const std::vector<double>& iters = r.replay_iter_ms.samples;
  if (probes.empty() || probes.size() != iters.size()) return;
  const double fastest = *std::min_element(probes.begin(), probes.end());
  if (!(fastest > 0)) return;
  std::vector<double> slowdown, undisturbed;
  for (size_t i = 0; i < probes.size(); ++i) {
    slowdown.push_back(probes[i] / fastest);
    if (slowdown.back() <= kDisturbedRatio) undisturbed.push_back(iters[i]);
  }
  os << "# host speed (--speed-probe): probes 1.00-"
     << formatFixed(*std::max_element(slowdown.begin(), slowdown.end()), 2)
     << "x the run's fastest (median " << formatFixed(medianOf(slowdown), 2) << "x); "
     << undisturbed.size() << " of " << iters.size() << " iterations within "
     << formatFixed(kDisturbedRatio, 1) << "x";
  if (!undisturbed.empty()) os << ", median " << formatDuration(medianOf(undisturbed) * 1e3);
  os << "\n";
}

void printIterations(const ReplayResult& r, std::ostream& os) {
  os << "# iteration" << std::setw(13) << "median" << std::setw(12) << "min"
     << std::setw(12) << "max" << std::setw(12) << "stddev" << std::setw(8) << "n"
     << "\n";
  printIterationRow(r.host_time ? "ops only" : "replay", r.replay_iter_ms, os);
  if (r.host_time) printIterationRow("with host", r.host_time->with_host_iter_ms, os);
  printHostSpeed(r, os);
  if (!r.original_iter_ms) {
    if (r.host_time) printHostTime(r, os);
    os << "# original: unknown (give --kineto or a trace with timings)\n#\n";
    return;
  }
  printIterationRow("original", *r.original_iter_ms, os);
  if (r.host_time) printHostTime(r, os);
  if (r.original_iter_ms->median > 0) {
    const double orig = r.original_iter_ms->median;
    os << "# replay/original median: " << formatFixed(r.replay_iter_ms.median / orig, 3) << "x";
    if (r.host_time) {
      os << " ops only, " << formatFixed(r.host_time->with_host_iter_ms.median / orig, 3)
         << "x with host time";
    }
    os << "  (original from " << r.original_source << ")\n";
  }
  os << "#\n";
}

void printKindRow(const KindStat& k, bool device, std::ostream& os) {
  os << std::left << std::setw(40) << clip(k.name, 39) << std::right
     << std::setw(7) << k.count << detail::padLeft(formatDuration(k.replay_us), 13);
  if (k.original_us >= 0) {
    const double diff = k.replay_us - k.original_us;
    os << detail::padLeft(formatDuration(k.original_us), 14)
       << detail::padLeft((diff >= 0 ? "+" : "") + formatDuration(diff), 12);
    os << std::setw(8) << (k.original_us > 0 ? formatFixed(k.replay_us / k.original_us, 2) : "");
  } else {
    os << std::setw(14) << "-" << std::setw(12) << "-" << std::setw(8) << "";
  }
  if (device) {
    os << detail::padLeft(detail::formatKnownDuration(k.device_us), 13)
       << detail::padLeft(detail::formatKnownDuration(k.original_device_us), 14);
  }
  os << "\n";
}

// Sums `b` into `a`, -1 (unknown) standing for nothing to add.
void addKnown(double& a, double b) {
  if (b >= 0) a = a < 0 ? b : a + b;
}

// Device busy time per iteration: sums of kernel times, beside the
// iteration times above (a GPU-bound iteration is mostly kernels).
void printDeviceTime(const ReplayResult& r, std::ostream& os) {
  const DeviceTime& d = *r.device_time;
  auto share = [](double part_ms, double whole_ms) {
    return whole_ms > 0 ? " = " + formatFixed(100 * part_ms / whole_ms, 0) + "% of its iteration"
                        : std::string();
  };
  os << "# device time per iteration (sum of kernel times):";
  if (d.replay_ms >= 0) {
    os << " replay " << formatDuration(d.replay_ms * 1e3) << share(d.replay_ms, r.replay_iter_ms.median)
       << " (" << d.timed_ops << " ops, medians over " << d.iters
       << " iterations with device events after the measured ones";
    if (d.host_synced_ops > 0) os << "; " << d.host_synced_ops << " ops wait for the device";
    os << ")";
  } else {
    os << " replay not timed (CUDA only)";
  }
  if (d.original_ms >= 0) {
    os << "; original " << formatDuration(d.original_ms * 1e3)
       << share(d.original_ms, r.original_iter_ms ? r.original_iter_ms->median : 0);
    if (d.original_ops_ms >= 0) os << ", of it " << formatDuration(d.original_ops_ms * 1e3)
                                   << " in the replayed ops";
    if (d.original_comm_ms > 0) {
      os << " (collectives " << formatDuration(d.original_comm_ms * 1e3)
         << ": replayed, timed on the host)";
    }
  }
  os << "\n#\n";
}

void printKinds(const ReplayResult& r, size_t top, std::ostream& os) {
  if (r.kinds.empty()) return;
  const std::vector<KindStat> sorted = detail::kindsByDifference(r.kinds);
  os << "# " << std::left << std::setw(38) << "op kind (per iteration)"
     << std::right << std::setw(7) << "count" << std::setw(13) << "replay"
     << std::setw(14) << "original" << std::setw(12) << "diff"
     << std::setw(8) << "ratio";
  const bool device = r.device_time.has_value();
  if (device) os << std::setw(13) << "device" << std::setw(14) << "orig device";
  os << "\n";
  KindStat rest{"(" + std::to_string(sorted.size() > top ? sorted.size() - top
                                                         : 0) +
                    " more kinds)",
                0, 0, 0, -1, -1};
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i < top) {
      printKindRow(sorted[i], device, os);
      continue;
    }
    rest.count += sorted[i].count;
    addKnown(rest.device_us, sorted[i].device_us);
    addKnown(rest.original_device_us, sorted[i].original_device_us);
    rest.replay_us += sorted[i].replay_us;
    // The sum of the rest's originals is meaningful only if all are known.
    if (rest.original_us >= 0 && sorted[i].original_us >= 0) {
      rest.original_us += sorted[i].original_us;
    } else {
      rest.original_us = -1;
    }
  }
  if (sorted.size() > top) printKindRow(rest, device, os);
  os << "#\n";
}

void printSkipped(const ReplayResult& r, std::ostream& os) {
  if (r.coverage.skipped_by_reason.empty()) return;
  os << "# skipped ops by reason\n#  count  reason\n";
  for (const auto& [reason, n] : detail::reasonsByCount(r.coverage)) {
    os << std::setw(8) << n << "  " << reason << "\n";
  }
  os << "#\n";
}

void printCollectives(const ReplayResult& r, std::ostream& os) {
  if (r.collectives.empty()) return;
  os << "# collectives (per call; algbw/busbw as in nccl-tests)\n# "
     << std::left << std::setw(18) << "type" << std::setw(14) << "group"
     << std::right << std::setw(14) << "size(B)" << std::setw(7) << "count"
     << std::setw(12) << "time" << std::setw(13) << "algbw(GB/s)"
     << std::setw(13) << "busbw(GB/s)" << "\n";
  for (const CollectiveStat& c : r.collectives) {
    os << "  " << std::left << std::setw(18) << clip(c.type, 17)
       << std::setw(14) << clip(c.group, 13) << std::right << std::setw(14)
       << c.bytes << std::setw(7) << c.count << detail::padLeft(formatDuration(c.time_us), 12)
       << std::setw(13)
       << formatFixed(c.algbw_gbps, 2) << std::setw(13)
       << formatFixed(c.busbw_gbps, 2) << "\n";
  }
  os << "#\n";
}

void printRankRow(const char* label, const std::vector<RankResult>& ranks,
                  double (*figure)(const RankResult&), std::ostream& os) {
  const detail::RankSpread s = detail::spreadOverRanks(ranks, figure);
  os << std::left << std::setw(24) << label << std::right << std::setw(12)
     << formatFixed(s.min, 3) << std::setw(12) << formatFixed(s.median, 3)
     << std::setw(12) << formatFixed(s.max, 3) << std::setw(10)
     << s.min_rank << std::setw(10) << s.max_rank << "\n";
}

void printRanks(const ReplayResult& r, std::ostream& os) {
  if (r.ranks.size() < 2) return;
  const std::string title = "# over " + std::to_string(r.ranks.size()) + " ranks";
  os << std::left << std::setw(24) << title << std::right << std::setw(12)
     << "min" << std::setw(12) << "median" << std::setw(12) << "max" << std::setw(10)
     << "min rank" << std::setw(10) << "max rank" << "\n";
  const auto& ranks = r.ranks;
  printRankRow("iteration median(ms)", ranks,
               [](const RankResult& x) { return x.iter_ms.median; }, os);
  if (r.host_time) {
    printRankRow("with host time(ms)", ranks,
                 [](const RankResult& x) { return x.with_host_ms; }, os);
  }
  printRankRow("comm(ms)", ranks,
               [](const RankResult& x) { return x.comm_ms; }, os);
  printRankRow("exposed comm(ms)", ranks,
               [](const RankResult& x) { return x.exposed_comm_ms; }, os);
  printRankRow("comm(MB)", ranks,
               [](const RankResult& x) { return x.comm_bytes / 1e6; }, os);
  printRankRow("cpu util(%)", ranks,
               [](const RankResult& x) { return x.system.cpu_util_pct; }, os);
  printRankRow("peak rss(MiB)", ranks, [](const RankResult& x) {
    return x.system.peak_rss_bytes / 1048576.0;
  }, os);
  const bool originals = std::all_of(ranks.begin(), ranks.end(), [](const RankResult& x) {
    return x.original_cpu_util_pct >= 0;
  });
  if (originals) {  // each rank's recorder sidecar
    printRankRow("original cpu util(%)", ranks,
                 [](const RankResult& x) { return x.original_cpu_util_pct; }, os);
    printRankRow("original rss(MiB)", ranks, [](const RankResult& x) {
      return x.original_peak_rss_bytes / 1048576.0;
    }, os);
  }
  os << "#\n";
}

void printSystem(const SystemMetrics& s, std::ostream& os) {
  os << "# system:";
  if (s.cpu_util_pct >= 0) os << " cpu " << formatFixed(s.cpu_util_pct, 1) << "%";
  os << "  peak rss " << formatBytes(s.peak_rss_bytes);
  if (s.peak_tensor_bytes > 0) {
    os << "  peak tensors " << formatBytes(s.peak_tensor_bytes);
  }
  if (s.gpu_util_pct) os << "  gpu util " << formatFixed(*s.gpu_util_pct, 1) << "%";
  if (s.gpu_mem_bytes) os << "  gpu mem " << formatBytes(*s.gpu_mem_bytes);
  if (s.gpu_power_w) os << "  gpu power " << formatFixed(*s.gpu_power_w, 1) << " W";
  os << "\n";
}

void printSystemRow(const char* label, const std::string& replay, const std::string& original,
                    std::ostream& os) {
  os << "#  " << std::left << std::setw(16) << label << std::right << std::setw(14) << replay
     << std::setw(14) << original << "\n";
}

// The replay's figures beside the original's (the recorder's sidecar).
void printSystemBoth(const ReplayResult& r, std::ostream& os) {
  const SystemMetrics& a = r.system;
  const OriginalSystem& o = *r.original_system;
  const SystemMetrics& b = o.metrics;
  auto pct = [](double v) { return v >= 0 ? formatFixed(v, 1) + "%" : std::string("-"); };
  auto opt = [](const auto& v, auto fmt) { return v ? fmt(*v) : std::string("-"); };
  auto watts = [](double w) { return formatFixed(w, 1) + " W"; };
  auto bytes = [](uint64_t x) { return formatBytes(x); };
  os << "# system" << std::setw(25) << "replay" << std::setw(14) << "original"
     << "   (original from " << o.source << (o.same_process ? "" : ", a separate timing run")
     << ")\n";
  printSystemRow("cpu util", pct(a.cpu_util_pct), pct(b.cpu_util_pct), os);
  printSystemRow("peak rss", formatBytes(a.peak_rss_bytes),
                 b.peak_rss_bytes ? formatBytes(b.peak_rss_bytes) : "-", os);
  auto faults = [](double v) { return v >= 0 ? formatFixed(v, 0) : std::string("-"); };
  if (a.minor_faults_per_iter >= 0 || b.minor_faults_per_iter >= 0) {
    printSystemRow("faults/iter", faults(a.minor_faults_per_iter), faults(b.minor_faults_per_iter), os);
    // Where the heaps part by more than 3x (and 500 faults), say what lines them up.
    const double x = a.minor_faults_per_iter, y = b.minor_faults_per_iter;
    if (!r.heap && x >= 0 && y >= 0 && std::max(x, y) > 3 * std::min(x, y) + 500) {
      os << "#    (the heaps part: --heap match sets glibc's thresholds to fault as the original did)\n";
    }
  }
  printSystemRow("threads", std::to_string(r.threads),
                 o.threads >= 0 ? std::to_string(o.threads) : "-", os);
  if (a.peak_tensor_bytes > 0) printSystemRow("peak tensors", formatBytes(a.peak_tensor_bytes), "-", os);
  if (a.gpu_util_pct || b.gpu_util_pct) {
    printSystemRow("gpu util", opt(a.gpu_util_pct, pct), opt(b.gpu_util_pct, pct), os);
    printSystemRow("gpu mem", opt(a.gpu_mem_bytes, bytes), opt(b.gpu_mem_bytes, bytes), os);
    printSystemRow("gpu power", opt(a.gpu_power_w, watts), opt(b.gpu_power_w, watts), os);
  }
  if (!o.device_properties.empty()) os << "#  original device properties: " << o.device_properties << "\n";
}
}  // namespace

// --heap match: the share of fresh pages set, and the counts it was set by.
void printHeap(const HeapMatch& h, std::ostream& os) {
  auto faults = [](double v) { return v >= 0 ? formatFixed(v, 0) : std::string("-"); };
  os << "# heap (--heap match): ";
  if (h.share < 0) {
    os << "left to glibc (" << h.note << "); " << faults(h.start_faults)
       << " faults/iter, the original " << faults(h.target_faults);
    if (h.fault_us > 0) os << "; a fault costs " << formatDuration(h.fault_us) << " here";
    os << "\n";
    return;
  }
  os << "blocks of 64 KiB and up kept, " << formatFixed(100 * h.share, 1) << "% of their "
     << faults(h.offered_pages) << " pages/iter fresh: " << faults(h.faults)
     << " faults/iter against the original's " << faults(h.target_faults) << " (glibc's own "
     << faults(h.start_faults) << ", a fault costs " << formatDuration(h.fault_us)
     << " here; counted";
  for (const HeapMatch::Step& p : h.steps) {
    os << " " << formatFixed(100 * p.share, 1) << "%:" << faults(p.faults);
  }
  os << ")\n";
  if (!h.note.empty()) os << "#   " << h.note << "\n";
}

void printReport(const ReplayResult& result, std::ostream& os,
                 size_t top_kinds) {
  printHeader(result, os);
  printIterations(result, os);
  if (result.device_time) printDeviceTime(result, os);
  printKinds(result, top_kinds, os);
  printSkipped(result, os);
  printCollectives(result, os);
  printRanks(result, os);
  if (result.original_system) {
    printSystemBoth(result, os);
  } else {
    printSystem(result.system, os);
  }
  if (result.heap) printHeap(*result.heap, os);
}

}  // namespace etb::replay
