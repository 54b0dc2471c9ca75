// SPDX-License-Identifier: MIT
#include "replayer/report_html.h"

#include <algorithm>
#include <sstream>

#include "core/base/file_io.h"
#include "replayer/report_svg.h"
#include "replayer/report_util.h"

namespace etb::replay {
namespace {
using detail::formatBytes;
using detail::formatDuration;
using detail::formatFixed;
using detail::htmlEscape;

constexpr size_t kChartKinds = 15;    // bars in the op-kind chart
constexpr size_t kTableRows = 200;    // rows in the skipped-op list

constexpr const char* kCss = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d232a;
 margin:24px auto;max-width:1100px;padding:0 16px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.meta{color:#5b6570;font-size:12px;word-break:break-all}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.card{border:1px solid #dde1e6;border-radius:8px;padding:10px 16px;min-width:150px}
.card .v{font-size:24px;font-weight:600}.card .k{color:#5b6570;font-size:12px}
.good{color:#1a7f37}.bad{color:#c0392b}
table{border-collapse:collapse;font-size:13px}
th,td{padding:4px 10px;border-bottom:1px solid #eceff2;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;
 vertical-align:middle}
svg .tick{font-size:11px;fill:#5b6570}svg .label{font-size:12px;fill:#1d232a}
svg .val{font-size:10px;fill:#5b6570}
)";

void card(std::ostringstream& s, const std::string& key,
          const std::string& value, const std::string& cls = "") {
  s << "<div class='card'><div class='k'>" << htmlEscape(key)
    << "</div><div class='v " << cls << "'>" << htmlEscape(value)
    << "</div></div>";
}

void header(std::ostringstream& s, const ReplayResult& r) {
  s << "<h1>et_replay: " << htmlEscape(r.trace_path) << "</h1><div class='meta'>"
    << "device " << htmlEscape(r.device) << " &middot; threads " << r.threads
    << " &middot; warmup " << r.warmup << " &middot; iterations " << r.iters
    << " &middot; ranks " << r.world_size << " &middot; comm "
    << htmlEscape(r.comm_backend) << " &middot; host " << htmlEscape(r.host)
    << " &middot; etbench " << htmlEscape(r.etbench_version)
    << " &middot; torch " << htmlEscape(r.torch_version) << "<br>";
  for (const std::string& a : r.argv) s << htmlEscape(a) << ' ';
  s << "</div>";
}

void ratioCard(std::ostringstream& s, const std::string& key, double replay, double original) {
  const double ratio = replay / original;
  const bool close = ratio > 0.9 && ratio < 1.1;
  card(s, key, formatFixed(ratio, 3) + "x", close ? "good" : "bad");
}

void hostCards(std::ostringstream& s, const ReplayResult& r) {
  const HostTime& h = *r.host_time;
  card(s, "replay with host time", formatDuration(h.with_host_iter_ms.median * 1e3));
  const double share = detail::hostSharePct(r);
  card(s, "original's host time" + (share >= 0 ? " (" + formatFixed(share, 1) + " % of it)"
                                                : std::string()),
       formatDuration(h.original_host_ms * 1e3));
  card(s, "host time emulated (less the replay's own between ops)",
       formatDuration(h.emulated_ms * 1e3));
}

void headline(std::ostringstream& s, const ReplayResult& r) {
  const Coverage& c = r.coverage;
  s << "<div class='cards'>";
  card(s, r.host_time ? "replay median iteration (ops only)" : "replay median iteration",
       formatDuration(r.replay_iter_ms.median * 1e3));
  if (r.host_time) hostCards(s, r);
  if (r.original_iter_ms) {
    card(s, "original median (" + r.original_source + ")",
         formatDuration(r.original_iter_ms->median * 1e3));
    if (r.original_iter_ms->median > 0) {
      const double orig = r.original_iter_ms->median;
      ratioCard(s, r.host_time ? "ops only / original" : "replay / original",
                r.replay_iter_ms.median, orig);
      if (r.host_time) {
        ratioCard(s, "with host time / original", r.host_time->with_host_iter_ms.median, orig);
      }
    }
  } else {
    card(s, "original", "unknown");
  }
  const double pct = detail::coveragePct(c);
  card(s, "coverage (" + std::to_string(c.replayed) + "/" +
              std::to_string(c.operators) + " ops)",
       formatFixed(pct, 1) + " %", pct >= 99 ? "good" : "bad");
  if (c.comms > 0) {
    card(s, "collectives replayed", std::to_string(c.comms_replayed) + "/" +
                                        std::to_string(c.comms));
  }
  s << "</div>";
  if (r.host_time) {
    const HostTime& h = *r.host_time;
    s << "<div class='meta'>host time: the original's gaps between top-level ops in the "
         "profiler file (" << formatDuration(h.recorded_gap_ms * 1e3) << ") less the "
         "recording's instrumentation, "
      << (h.profiler_cost_from == "recording" ? "as the recording measured it: " : "measured here at ")
      << formatDuration(h.profiler_event_us)
      << " per event (" << h.boundaries << " event boundaries in " << h.gaps
      << " gaps), replayed as busy waits of CPU time";
    if (h.stalls > 0) {
      s << "; not counted: " << formatDuration(h.stalled_ms * 1e3) << " in " << h.stalls
        << " eventless stretches longer than " << formatDuration(h.stall_limit_us);
    }
    s << "</div>";
  }
}

void charts(std::ostringstream& s, const ReplayResult& r) {
  s << "<h2>Iteration time spread</h2>";
  std::vector<detail::Series> series{
      {r.host_time ? "ops only" : "replay", &r.replay_iter_ms, "#3b6fd6"}};
  if (r.host_time) series.push_back({"with host", &r.host_time->with_host_iter_ms, "#d67f3b"});
  if (r.original_iter_ms) {
    series.push_back({"original", &*r.original_iter_ms, "#7a828c"});
  }
  s << "<div class='meta'>dots: measured iterations; box: 10th to 90th "
       "percentile; thick line: median; thin line: min to max</div>"
    << detail::iterationStripChart(series);
  if (r.kinds.empty()) return;
  std::vector<KindStat> kinds = detail::kindsByDifference(r.kinds);
  if (kinds.size() > kChartKinds) kinds.resize(kChartKinds);
  s << "<h2>Time per op kind (biggest differences first, top "
    << kinds.size() << " of " << r.kinds.size() << ")</h2>"
    << "<div class='legend'><span style='background:#3b6fd6'></span>replay"
    << "<span style='background:#9aa3ad'></span>original</div>"
    << detail::kindBarChart(kinds);
}

void skippedTable(std::ostringstream& s, const Coverage& c) {
  if (c.skipped_by_reason.empty()) return;
  s << "<h2>Skipped operators (" << c.skipped << ")</h2><table><tr>"
    << "<th class='n'>count</th><th>reason</th></tr>";
  for (const auto& [reason, n] : detail::reasonsByCount(c)) {
    s << "<tr><td class='n'>" << n << "</td><td>" << htmlEscape(reason)
      << "</td></tr>";
  }
  s << "</table><details><summary>every skipped op</summary><table><tr>"
    << "<th class='n'>node</th><th>op</th><th>reason</th></tr>";
  for (size_t i = 0; i < c.skipped_ops.size() && i < kTableRows; ++i) {
    const SkippedOp& op = c.skipped_ops[i];
    s << "<tr><td class='n'>" << op.node_id << "</td><td>"
      << htmlEscape(op.name) << "</td><td>" << htmlEscape(op.reason)
      << "</td></tr>";
  }
  s << "</table></details>";
}

void collectivesTable(std::ostringstream& s, const ReplayResult& r) {
  if (r.collectives.empty()) return;
  s << "<h2>Collectives (per call)</h2><table><tr><th>type</th><th>group</th>"
    << "<th class='n'>size</th><th class='n'>calls/iter</th>"
    << "<th class='n'>time</th><th class='n'>algbw (GB/s)</th>"
    << "<th class='n'>busbw (GB/s)</th></tr>";
  for (const CollectiveStat& c : r.collectives) {
    s << "<tr><td>" << htmlEscape(c.type) << "</td><td>" << htmlEscape(c.group)
      << "</td><td class='n'>" << formatBytes(c.bytes) << "</td><td class='n'>"
      << c.count << "</td><td class='n'>" << formatDuration(c.time_us)
      << "</td><td class='n'>" << formatFixed(c.algbw_gbps, 2)
      << "</td><td class='n'>" << formatFixed(c.busbw_gbps, 2) << "</td></tr>";
  }
  s << "</table>";
}

// Device (GPU) time per iteration and per op kind, when either side has it.
void deviceTable(std::ostringstream& s, const ReplayResult& r) {
  if (!r.device_time) return;
  const DeviceTime& d = *r.device_time;
  s << "<h2>Device time (sums of kernel times)</h2><div class='meta'>replay: ";
  if (d.iters > 0) {
    s << "CUDA events around each op call, median over " << d.iters
      << " iterations after the measured ones (" << d.timed_ops << " ops";
    if (d.host_synced_ops > 0) s << ", " << d.host_synced_ops << " waiting for the device";
    s << "; collectives timed on the host)";
  } else {
    s << "not timed (CUDA only)";
  }
  s << "; original: the profiler's kernels linked to each op and the ops below it</div>"
       "<div class='cards'>";
  card(s, "replay device time per iteration", detail::formatKnownDuration(d.replay_ms * 1e3));
  card(s, "original device time per iteration",
       detail::formatKnownDuration(d.original_ms * 1e3));
  if (d.original_comm_ms > 0) card(s, "of it, collectives", formatDuration(d.original_comm_ms * 1e3));
  s << "</div><table><tr><th>op kind</th><th class='n'>count</th><th class='n'>replay device</th>"
    << "<th class='n'>original device</th></tr>";
  std::vector<KindStat> kinds = r.kinds;
  std::stable_sort(kinds.begin(), kinds.end(), [](const KindStat& a, const KindStat& b) {
    return std::max(a.device_us, a.original_device_us) > std::max(b.device_us, b.original_device_us);
  });
  for (size_t i = 0; i < kinds.size() && i < kTableRows; ++i) {
    const KindStat& k = kinds[i];
    if (k.device_us < 0 && k.original_device_us < 0) break;
    s << "<tr><td>" << htmlEscape(k.name) << "</td><td class='n'>" << k.count << "</td><td class='n'>"
      << detail::formatKnownDuration(k.device_us) << "</td><td class='n'>"
      << detail::formatKnownDuration(k.original_device_us) << "</td></tr>";
  }
  s << "</table>";
}

void ranksTable(std::ostringstream& s, const ReplayResult& r) {
  if (r.ranks.size() < 2) return;
  s << "<h2>Ranks</h2><table><tr><th class='n'>rank</th><th>host</th>"
    << "<th class='n'>median iter</th><th class='n'>comm</th>"
    << "<th class='n'>exposed comm</th><th class='n'>CPU (%)</th>"
    << "<th class='n'>peak RSS</th></tr>";
  for (const RankResult& k : r.ranks) {
    s << "<tr><td class='n'>" << k.rank << "</td><td>" << htmlEscape(k.host)
      << "</td><td class='n'>" << formatDuration(k.iter_ms.median * 1e3)
      << "</td><td class='n'>" << formatDuration(k.comm_ms * 1e3)
      << "</td><td class='n'>" << formatDuration(k.exposed_comm_ms * 1e3)
      << "</td><td class='n'>" << formatFixed(k.system.cpu_util_pct, 1)
      << "</td><td class='n'>" << formatBytes(k.system.peak_rss_bytes)
      << "</td></tr>";
  }
  s << "</table>";
}

void systemCards(std::ostringstream& s, const SystemMetrics& m) {
  s << "<h2>System</h2><div class='cards'>";
  if (m.cpu_util_pct >= 0) card(s, "CPU utilisation", formatFixed(m.cpu_util_pct, 1) + " %");
  card(s, "peak RSS", formatBytes(m.peak_rss_bytes));
  if (m.peak_tensor_bytes > 0) card(s, "peak tensors", formatBytes(m.peak_tensor_bytes));
  if (m.gpu_util_pct) card(s, "GPU utilisation", formatFixed(*m.gpu_util_pct, 1) + " %");
  if (m.gpu_mem_bytes) card(s, "GPU memory", formatBytes(*m.gpu_mem_bytes));
  if (m.gpu_power_w) card(s, "GPU power", formatFixed(*m.gpu_power_w, 1) + " W");
  s << "</div>";
}

void systemRow(std::ostringstream& s, const char* what, const std::string& replay,
               const std::string& original) {
  s << "<tr><td>" << what << "</td><td class='n'>" << htmlEscape(replay) << "</td><td class='n'>"
    << htmlEscape(original) << "</td></tr>";
}

// The replay's figures beside the original's, from the recorder's sidecar.
void systemTable(std::ostringstream& s, const ReplayResult& r) {
  const SystemMetrics& a = r.system;
  const OriginalSystem& o = *r.original_system;
  const SystemMetrics& b = o.metrics;
  auto pct = [](double v) { return v >= 0 ? formatFixed(v, 1) + " %" : std::string("-"); };
  auto optPct = [&](const std::optional<double>& v) { return v ? pct(*v) : std::string("-"); };
  auto optBytes = [](const std::optional<uint64_t>& v) { return v ? formatBytes(*v) : "-"; };
  auto optW = [](const std::optional<double>& v) { return v ? formatFixed(*v, 1) + " W" : "-"; };
  s << "<h2>System</h2><table><tr><th></th><th class='n'>replay</th><th class='n'>original</th>"
    << "</tr>";
  systemRow(s, "CPU utilisation", pct(a.cpu_util_pct), pct(b.cpu_util_pct));
  systemRow(s, "peak RSS", formatBytes(a.peak_rss_bytes),
            b.peak_rss_bytes ? formatBytes(b.peak_rss_bytes) : "-");
  auto faults = [](double v) { return v >= 0 ? formatFixed(v, 0) : std::string("-"); };
  if (a.minor_faults_per_iter >= 0 || b.minor_faults_per_iter >= 0) {
    systemRow(s, "minor page faults per iteration", faults(a.minor_faults_per_iter),
              faults(b.minor_faults_per_iter));
  }
  if (r.heap) {
    systemRow(s, "heap (--heap match)",
              r.heap->share >= 0
                  ? "large blocks kept, " + formatFixed(100 * r.heap->share, 1) + "% of their pages fresh"
                  : "glibc's own: " + r.heap->note,
              "-");
  }
  systemRow(s, "threads", std::to_string(r.threads), o.threads >= 0 ? std::to_string(o.threads) : "-");
  if (a.peak_tensor_bytes > 0) systemRow(s, "peak tensors", formatBytes(a.peak_tensor_bytes), "-");
  if (a.gpu_util_pct || b.gpu_util_pct) {
    systemRow(s, "GPU utilisation", optPct(a.gpu_util_pct), optPct(b.gpu_util_pct));
    systemRow(s, "GPU memory", optBytes(a.gpu_mem_bytes), optBytes(b.gpu_mem_bytes));
    systemRow(s, "GPU power", optW(a.gpu_power_w), optW(b.gpu_power_w));
  }
  s << "</table><div class='meta'>original from " << htmlEscape(o.source)
    << (o.same_process ? "" : " (a separate timing run of the same program)");
  if (!o.window.empty()) s << ": " << htmlEscape(o.window);
  if (!o.device_properties.empty()) {
    s << "<br>original device properties: " << htmlEscape(o.device_properties);
  }
  s << "</div>";
}
}  // namespace

std::string reportHtml(const ReplayResult& r) {
  std::ostringstream s;
  s << "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
    << "<title>et_replay: " << htmlEscape(r.trace_path) << "</title><style>"
    << kCss << "</style></head><body>";
  header(s, r);
  headline(s, r);
  charts(s, r);
  deviceTable(s, r);
  skippedTable(s, r.coverage);
  collectivesTable(s, r);
  ranksTable(s, r);
  if (r.original_system) {
    systemTable(s, r);
  } else {
    systemCards(s, r.system);
  }
  s << "</body></html>\n";
  return s.str();
}

void writeReportHtml(const ReplayResult& result, const std::string& path) {
  writeFileMaybeGzip(path, reportHtml(result));
}

}  // namespace etb::replay
