// SPDX-License-Identifier: MIT
#include "replayer/report_json.h"

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "replayer/report_util.h"

namespace etb::replay {
namespace {
using nlohmann::json;

// Bumped when a field changes meaning or goes away (additions keep it).
constexpr int kSchemaVersion = 1;

json distributionJson(const Distribution& d) {
  return {{"samples", d.samples}, {"min", d.min},       {"max", d.max},
          {"mean", d.mean},       {"median", d.median}, {"p90", d.p90},
          {"stddev", d.stddev}};
}

Distribution distributionFrom(const json& j) {
  Distribution d;
  d.samples = j.at("samples").get<std::vector<double>>();
  d.min = j.at("min").get<double>();
  d.max = j.at("max").get<double>();
  d.mean = j.at("mean").get<double>();
  d.median = j.at("median").get<double>();
  d.p90 = j.at("p90").get<double>();
  d.stddev = j.at("stddev").get<double>();
  return d;
}

json systemJson(const SystemMetrics& s) {
  json j = {{"peak_rss_bytes", s.peak_rss_bytes},
            {"peak_tensor_bytes", s.peak_tensor_bytes}};
  if (s.cpu_util_pct >= 0) j["cpu_util_pct"] = s.cpu_util_pct;
  if (s.minor_faults_per_iter >= 0) j["minor_faults_per_iter"] = s.minor_faults_per_iter;
  if (s.gpu_util_pct) j["gpu_util_pct"] = *s.gpu_util_pct;
  if (s.gpu_mem_bytes) j["gpu_mem_bytes"] = *s.gpu_mem_bytes;
  if (s.gpu_power_w) j["gpu_power_w"] = *s.gpu_power_w;
  return j;
}

SystemMetrics systemFrom(const json& j) {
  SystemMetrics s;
  s.cpu_util_pct = j.value("cpu_util_pct", -1.0);
  s.peak_rss_bytes = j.at("peak_rss_bytes").get<uint64_t>();
  s.peak_tensor_bytes = j.at("peak_tensor_bytes").get<uint64_t>();
  s.minor_faults_per_iter = j.value("minor_faults_per_iter", -1.0);
  if (j.contains("gpu_util_pct")) s.gpu_util_pct = j["gpu_util_pct"].get<double>();
  if (j.contains("gpu_mem_bytes")) s.gpu_mem_bytes = j["gpu_mem_bytes"].get<uint64_t>();
  if (j.contains("gpu_power_w")) s.gpu_power_w = j["gpu_power_w"].get<double>();
  return s;
}

json rankJson(const RankResult& r) {
  json j = {{"rank", r.rank},
            {"host", r.host},
            {"iter_ms", distributionJson(r.iter_ms)},
            {"comm_ms", r.comm_ms},
            {"exposed_comm_ms", r.exposed_comm_ms},
            {"comm_bytes", r.comm_bytes},
            {"coverage", {{"operators", r.operators}, {"replayed", r.replayed},
                          {"comms", r.comms}, {"comms_replayed", r.comms_replayed}}},
            {"system", systemJson(r.system)}};
  if (r.original_ms >= 0) j["original_ms"] = r.original_ms;
  if (r.with_host_ms >= 0) j["with_host_ms"] = r.with_host_ms;
  if (r.original_cpu_util_pct >= 0) {
    j["original_system"] = {{"cpu_util_pct", r.original_cpu_util_pct},
                            {"peak_rss_bytes", r.original_peak_rss_bytes}};
  }
  return j;
}

json runJson(const ReplayResult& r) {
  return {{"argv", r.argv},
          {"trace", r.trace_path},
          {"schema", r.schema},
          {"device", r.device},
          {"threads", r.threads},
          {"warmup", r.warmup},
          {"warmup_ms", r.warmup_ms},
          {"state", r.state},
          {"state_reset_bytes", r.state_reset_bytes},
          {"denormals", r.denormals},
          {"iters", r.iters},
          {"world_size", r.world_size},
          {"host", r.host},
          {"comm_backend", r.comm_backend},
          {"versions",
           {{"etbench", r.etbench_version}, {"torch", r.torch_version}}}};
}

json opListJson(const std::vector<SkippedOp>& ops) {
  json out = json::array();
  for (const SkippedOp& op : ops) {
    out.push_back({{"node_id", op.node_id}, {"name", op.name}, {"reason", op.reason}});
  }
  return out;
}

json coverageJson(const Coverage& c) {
  json j = {{"operators", c.operators},
          {"replayed", c.replayed},
          {"skipped", c.skipped},
          {"skipped_by_reason", c.skipped_by_reason},
          {"skipped_ops", opListJson(c.skipped_ops)},
          {"fallback_fp32", c.fallback_fp32},
          {"fallback_ops", opListJson(c.fallback_ops)},
          {"noop", c.noop},
          {"noop_ops", opListJson(c.noop_ops)},
          {"adapted", c.adapted},
          {"adapted_ops", opListJson(c.adapted_ops)},
          {"comms", c.comms},
          {"comms_replayed", c.comms_replayed},
          {"strided_leaves", c.strided_leaves},
          {"nan_outputs", c.nan_outputs},
          {"nan_ops", opListJson(c.nan_ops)}};
  if (c.autograd_forward_ops >= 0) {
    j["autograd"] = {{"forward_ops", c.autograd_forward_ops},
                     {"parameters", c.autograd_parameters},
                     {"none_because", c.autograd_none}};
  }
  return j;
}

json opsJson(const std::vector<OpStat>& ops) {
  json out = json::array();
  for (const OpStat& op : ops) {
    json j = {{"node_id", op.node_id},   {"name", op.name},
              {"overload", op.overload}, {"replayed", op.replayed},
              {"is_comm", op.is_comm},   {"replay_us", op.replay_us},
              {"start_us", op.start_us}};
    if (op.original_us >= 0) j["original_us"] = op.original_us;
    if (op.device_us >= 0) j["device_us"] = op.device_us;
    if (op.original_device_us >= 0) j["original_device_us"] = op.original_device_us;
    if (op.minor_faults >= 0) j["minor_faults"] = op.minor_faults;
    out.push_back(std::move(j));
  }
  return out;
}

json kindsJson(const std::vector<KindStat>& kinds) {
  json out = json::array();
  for (const KindStat& k : kinds) {
    json j = {{"name", k.name}, {"count", k.count}, {"replay_us", k.replay_us}};
    if (k.original_us >= 0) j["original_us"] = k.original_us;
    if (k.device_us >= 0) j["device_us"] = k.device_us;
    if (k.original_device_us >= 0) j["original_device_us"] = k.original_device_us;
    out.push_back(std::move(j));
  }
  return out;
}

json heapJson(const HeapMatch& h) {
  json j = {{"target_faults_per_iter", h.target_faults},
            {"start_faults_per_iter", h.start_faults},
            {"faults_per_iter", h.faults},
            {"fault_us", h.fault_us},
            {"iteration_ms", h.iteration_ms},
            {"fresh_share", h.share},
            {"steps", json::array()}};
  for (const HeapMatch::Step& p : h.steps) {
    j["steps"].push_back({{"fresh_share", p.share}, {"faults_per_iter", p.faults}});
  }
  if (h.fixed_faults >= 0) j["fixed_faults_per_iter"] = h.fixed_faults;
  if (h.offered_pages >= 0) j["offered_pages_per_iter"] = h.offered_pages;
  if (!h.note.empty()) j["note"] = h.note;
  return j;
}

json hostTimeJson(const ReplayResult& r) {
  const HostTime& h = *r.host_time;
  json j = {{"with_host_iter_ms", distributionJson(h.with_host_iter_ms)},
            {"emulated_ms", h.emulated_ms},
            {"original_host_ms", h.original_host_ms},
            {"replay_between_ms", h.replay_between_ms},
            {"recorded_gap_ms", h.recorded_gap_ms},
            {"profiler_event_us", h.profiler_event_us},
            {"profiler_label_us", h.profiler_label_us},
            {"profiler_gap_us", h.profiler_gap_us},
            {"profiler_cost_from", h.profiler_cost_from},
            {"gaps", h.gaps},
            {"boundaries", h.boundaries},
            {"label_boundaries", h.label_boundaries},
            {"untimed_ops", h.untimed_ops},
            {"stalls", h.stalls},
            {"stalled_ms", h.stalled_ms},
            {"stall_limit_us", h.stall_limit_us}};
  const double share = detail::hostSharePct(r);
  if (share >= 0) {
    j["share_pct"] = share;
    j["ratio"] = h.with_host_iter_ms.median / r.original_iter_ms->median;
  }
  return j;
}

json deviceTimeJson(const DeviceTime& d) {
  json j = {{"iters", d.iters},
            {"timed_ops", d.timed_ops},
            {"host_synced_ops", d.host_synced_ops},
            {"events_per_iter", d.events_per_iter}};
  if (d.replay_ms >= 0) j["replay_ms"] = d.replay_ms;
  if (d.iters > 0) j["timed_iter_ms"] = distributionJson(d.timed_iter_ms);
  if (d.original_ms >= 0) j["original_ms"] = d.original_ms;
  if (d.original_ops_ms >= 0) j["original_ops_ms"] = d.original_ops_ms;
  if (d.original_comm_ms >= 0) j["original_comm_ms"] = d.original_comm_ms;
  return j;
}

json originalSystemJson(const OriginalSystem& o) {
  json j = systemJson(o.metrics);
  j.erase("peak_tensor_bytes");
  j["source"] = o.source;
  j["window"] = o.window;
  j["same_process"] = o.same_process;
  if (o.threads >= 0) j["threads"] = o.threads;
  if (o.os_threads >= 0) j["os_threads"] = o.os_threads;
  if (!o.device_properties.empty()) j["device_properties_json"] = o.device_properties;
  return j;
}

json collectivesJson(const std::vector<CollectiveStat>& colls) {
  json out = json::array();
  for (const CollectiveStat& c : colls) {
    out.push_back({{"type", c.type},
                   {"group", c.group},
                   {"bytes", c.bytes},
                   {"count", c.count},
                   {"time_us", c.time_us},
                   {"algbw_gbps", c.algbw_gbps},
                   {"busbw_gbps", c.busbw_gbps}});
  }
  return out;
}
}  // namespace

json reportToJson(const ReplayResult& r) {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["run"] = runJson(r);
  j["coverage"] = coverageJson(r.coverage);
  j["replay"] = {{"iter_ms", distributionJson(r.replay_iter_ms)}};
  if (!r.speed_probe_us.empty()) j["replay"]["speed_probe_us"] = r.speed_probe_us;
  if (r.original_iter_ms) {
    json orig = {{"source", r.original_source},
                 {"iter_ms", distributionJson(*r.original_iter_ms)}};
    // Replay over original medians: >1 means the replay is slower.
    if (r.original_iter_ms->median > 0) {
      orig["ratio"] = r.replay_iter_ms.median / r.original_iter_ms->median;
    }
    j["original"] = std::move(orig);
  }
  j["ops"] = opsJson(r.ops);
  j["kinds"] = kindsJson(r.kinds);
  j["collectives"] = collectivesJson(r.collectives);
  j["ranks"] = json::array();
  for (const RankResult& rank : r.ranks) j["ranks"].push_back(rankJson(rank));
  j["system"] = systemJson(r.system);
  if (r.original_system) j["original_system"] = originalSystemJson(*r.original_system);
  if (r.host_time) j["host_time"] = hostTimeJson(r);
  if (r.heap) j["heap"] = heapJson(*r.heap);
  if (r.device_time) j["device_time"] = deviceTimeJson(*r.device_time);
  return j;
}

void writeReportJson(const ReplayResult& result, const std::string& path) {
  writeFileMaybeGzip(path, reportToJson(result).dump(2) + "\n");
}

std::string rankResultToJson(const RankResult& rank) {
  return rankJson(rank).dump();
}

RankResult rankResultFromJson(const std::string& text) {
  try {
    const json j = json::parse(text);
    RankResult r;
    r.rank = j.at("rank").get<int>();
    r.host = j.at("host").get<std::string>();
    r.iter_ms = distributionFrom(j.at("iter_ms"));
    r.comm_ms = j.at("comm_ms").get<double>();
    r.exposed_comm_ms = j.at("exposed_comm_ms").get<double>();
    r.comm_bytes = j.at("comm_bytes").get<uint64_t>();
    r.original_ms = j.value("original_ms", -1.0);
    r.with_host_ms = j.value("with_host_ms", -1.0);
    if (j.contains("original_system")) {
      r.original_cpu_util_pct = j["original_system"].at("cpu_util_pct").get<double>();
      r.original_peak_rss_bytes = j["original_system"].at("peak_rss_bytes").get<uint64_t>();
    }
    r.system = systemFrom(j.at("system"));
    if (j.contains("coverage")) {
      const json& c = j["coverage"];
      r.operators = c.at("operators").get<uint64_t>();
      r.replayed = c.at("replayed").get<uint64_t>();
      r.comms = c.at("comms").get<uint64_t>();
      r.comms_replayed = c.at("comms_replayed").get<uint64_t>();
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    ETB_RUNTIME_ERROR("malformed per-rank result (", e.what(), ")");
  }
}

}  // namespace etb::replay
