// SPDX-License-Identifier: MIT
#include "predictor/predict_report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/base/error.h"

namespace etb::predict {
namespace {
using nlohmann::json;

struct Shares {
  double compute = 0, exposed_comm = 0, overhead = 0;
};

// Shares of the slowest rank's iteration (with host time when recorded).
Shares sharesOf(const Prediction& p) {
  const RankPrediction* slow = &p.ranks.front();
  for (const RankPrediction& r : p.ranks) {
    if (r.iter_us > slow->iter_us) slow = &r;
  }
  const double host = std::max(slow->host_us, 0.0);
  const double total = slow->iter_us + host;
  if (total <= 0) return {};
  return {slow->compute_us / total, slow->exposed_comm_us / total, host / total};
}

std::vector<std::pair<std::string, KindPrediction>> byTime(const Prediction& p) {
  std::vector<std::pair<std::string, KindPrediction>> v(p.kinds.begin(), p.kinds.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
  return v;
}
}  // namespace

std::string predictionToJson(const Prediction& p, const ReportContext& ctx) {
  const Shares s = sharesOf(p);
  json kinds = json::array();
  for (const auto& [name, k] : byTime(p)) {
    kinds.push_back({{"name", name}, {"count", k.count}, {"us", k.us}, {"model", k.family}});
  }
  json ranks = json::array();
  for (const RankPrediction& r : p.ranks) {
    ranks.push_back({{"rank", r.rank}, {"iter_ms", r.iter_us / 1e3},
                     {"compute_ms", r.compute_us / 1e3}, {"comm_ms", r.comm_us / 1e3},
                     {"exposed_comm_ms", r.exposed_comm_us / 1e3},
                     {"host_ms", r.host_us < 0 ? json(nullptr) : json(r.host_us / 1e3)}});
    if (r.device_us >= 0) ranks.back()["device_busy_ms"] = r.device_us / 1e3;
  }
  // {"group": the trace's size, "from": the profile's} per scaled group size.
  json scaled = json::array();
  for (const auto& [group, measured] : p.comm_groups_scaled) scaled.push_back({{"group", group}, {"from", measured}});
  json ops = json::array();
  for (const OpPrediction& o : p.ranks.front().ops) {
    ops.push_back({{"node_id", o.node_id}, {"name", o.name}, {"model", o.family},
                   {"us", o.us}, {"start_us", o.start_us}, {"first_touch_us", o.first_touch_us},
                   {"fresh_pages", o.fresh_pages}, {"release_us", o.release_us}, {"episode_us", o.episode_us}, {"cold_code_us", o.cold_code_us}, {"dram_share", o.dram_share}, {"l3_share", o.l3_share}});
    if (o.device_us >= 0) {
      ops.back()["device_us"] = o.device_us;
      ops.back()["launch_us"] = o.launch_us;
    }
  }
  json j = {
      {"tool", "et_predict"},
      {"argv", ctx.argv},
      {"trace", ctx.trace_path},
      {"profile", {{"path", ctx.profile_path},
                   {"host", ctx.profile.host},
                   {"device", ctx.profile.device},
                   {"device_model", ctx.profile.device_model},
                   {"load_avg", ctx.profile.load_avg < 0 ? json(nullptr) : json(ctx.profile.load_avg)},
                   {"shared", measuredBesideOtherWork(ctx.profile)}}},
      {"predicted",
       {{"iter_ms", p.iter_ms},
        {"iter_with_host_ms", p.iter_with_host_ms < 0 ? json(nullptr) : json(p.iter_with_host_ms)},
        {"comm_backend", p.comm_backend},
        {"speed",
         {{"from", p.speed_from}, {"slowdown", p.slowdown}, {"profile_slowdown", p.profile_slowdown}}},
        {"share", {{"compute", s.compute}, {"exposed_comm", s.exposed_comm}, {"overhead", s.overhead}}},
        {"kinds", kinds},
        {"ranks", ranks}}},
      {"coverage",
       {{"operators", p.ops}, {"modelled", p.modelled}, {"fallback", p.fallback},
        {"skipped", p.skipped}, {"skipped_by_reason", p.skipped_by_reason}, {"comms", p.comms},
        {"comms_unsized", p.comms_unsized}, {"comm_groups_scaled", scaled}}},
      {"aten_calls_while_predicting", p.aten_calls},
      {"heap_start_bytes", p.heap_start_bytes},
      {"faults_from", p.faults_from},
      {"ops", ops}};
  return j.dump(1) + "\n";
}

void writePredictionJson(const Prediction& p, const ReportContext& ctx, const std::string& path) {
  std::ofstream out(path);
  if (!out) ETB_INPUT_ERROR(SourceLoc{path}, "cannot write the report");
  out << predictionToJson(p, ctx);
}

void printPrediction(const Prediction& p, const ReportContext& ctx, std::ostream& out) {
  const Shares s = sharesOf(p);
  char line[256];
  out << "# et_predict " << ctx.trace_path << "  (profile " << ctx.profile_path << ", host "
      << ctx.profile.host;
  if (!ctx.profile.device_model.empty()) out << ", " << ctx.profile.device_model;
  if (ctx.profile.load_avg >= 0) {
    std::snprintf(line, sizeof(line), ", load %.1f on %d cores with %d profile thread(s)",
                  ctx.profile.load_avg, ctx.profile.cores, ctx.profile.threads);
    out << line;
  }
  out << ")\n";
  if (measuredBesideOtherWork(ctx.profile)) {
    out << "# the profile was measured while other work shared the machine: these times hold for "
           "replays run in that state\n";
  }
  std::snprintf(line, sizeof(line),
                "# ops %llu: %llu modelled, %llu by bytes moved, %llu skipped (not in this "
                "libtorch); %llu collectives (%s curves)\n",
                static_cast<unsigned long long>(p.ops), static_cast<unsigned long long>(p.modelled),
                static_cast<unsigned long long>(p.fallback), static_cast<unsigned long long>(p.skipped),
                static_cast<unsigned long long>(p.comms), p.comm_backend.c_str());
  out << line;
  if (p.comms_unsized > 0) {
    out << "# " << p.comms_unsized << " collective(s) recorded without sizes, not replayed by "
        << "et_replay: predicted as 0 us\n";
  }
  for (const auto& [group, measured] : p.comm_groups_scaled) {
    out << "# collectives of " << group << " ranks: the profile has none; read from its " << measured
        << "-rank curves by the ring factor (measure with mpirun -np " << group << " et_profile_hw)\n";
  }
  if (p.speed_from != "profile") {
    std::snprintf(line, sizeof(line),
                  "# host speed: %s, %.2fx the profile's fastest probe (typical while it was "
                  "measured: %.2fx)\n",
                  p.speed_from.c_str(), p.slowdown, p.profile_slowdown);
    out << line;
  }
  if (p.faults_from == "original") {
    out << "# page faults: the original's count per step (--faults original), as et_replay "
           "--heap match gives it\n";
  }
  out << "# " << "op kind" << std::string(28, ' ') << "count    time(us)  model\n";
  size_t shown = 0;
  for (const auto& [name, k] : byTime(p)) {
    if (++shown > 15) break;
    std::snprintf(line, sizeof(line), "  %-34.34s %6llu %11.1f  %s\n", name.c_str(),
                  static_cast<unsigned long long>(k.count), k.us, k.family.c_str());
    out << line;
  }
  std::snprintf(line, sizeof(line),
                "predicted iteration: %.3f ms (compute %.0f%%, exposed comm %.0f%%, host %.0f%%)\n",
                p.iter_ms, 100 * s.compute, 100 * s.exposed_comm, 100 * s.overhead);
  out << line;
  if (p.iter_with_host_ms >= 0) {
    std::snprintf(line, sizeof(line), "with the recorded host time: %.3f ms\n", p.iter_with_host_ms);
    out << line;
  }
  if (const RankPrediction& r0 = p.ranks.front(); r0.device_us >= 0 && r0.iter_us > 0) {
    std::snprintf(line, sizeof(line),
                  "device busy: %.3f ms (%.0f%% of the iteration; the rest waits for launches)\n",
                  r0.device_us / 1e3, 100 * r0.device_us / r0.iter_us);
    out << line;
  }
}

}  // namespace etb::predict
