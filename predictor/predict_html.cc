// SPDX-License-Identifier: MIT
// writePredictionHtml(): plain HTML and inline CSS, nothing fetched.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "predictor/predict_report.h"

namespace etb::predict {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// A time with the unit that reads: s, ms or µs.
std::string duration(double us) {
  if (us >= 1e6) return fixed(us / 1e6, 2) + " s";
  if (us >= 1e3) return fixed(us / 1e3, 2) + " ms";
  return fixed(us, 1) + " µs";
}

void shareBar(std::ostream& o, const Prediction& p) {
  const RankPrediction& r = *std::max_element(
      p.ranks.begin(), p.ranks.end(),
      [](const RankPrediction& a, const RankPrediction& b) { return a.iter_us < b.iter_us; });
  const double host = std::max(r.host_us, 0.0), total = std::max(r.iter_us + host, 1e-9);
  const struct { const char* name; double us; const char* colour; } parts[] = {
      {"compute", r.compute_us, "#4c78a8"},
      {"exposed communication", r.exposed_comm_us, "#f58518"},
      {"host (recorded)", host, "#9d9d9d"}};
  o << "<div style='display:flex;height:22px;width:600px;border:1px solid #888'>";
  for (const auto& part : parts) {
    o << "<div title='" << part.name << "' style='background:" << part.colour
      << ";width:" << fixed(100 * part.us / total, 2) << "%'></div>";
  }
  o << "</div><p>";
  for (const auto& part : parts) {
    o << "<span style='color:" << part.colour << "'>&#9632;</span> " << part.name << " "
      << fixed(100 * part.us / total, 1) << "% &nbsp; ";
  }
  o << "</p>\n";
}
}  // namespace

void writePredictionHtml(const Prediction& p, const ReportContext& ctx, const std::string& path) {
  std::ofstream o(path);
  if (!o) ETB_INPUT_ERROR(SourceLoc{path}, "cannot write the report");
  o << "<!doctype html><html><head><meta charset='utf-8'><title>et_predict "
    << escape(ctx.trace_path) << "</title><style>body{font-family:sans-serif;margin:2em}"
    << "td,th{padding:2px 10px;text-align:right}td:first-child{text-align:left}</style></head><body>\n"
    << "<h1>Predicted iteration: " << duration(p.iter_ms * 1e3) << "</h1>\n<p>"
    << escape(ctx.trace_path) << " on the machine profiled in " << escape(ctx.profile_path)
    << " (" << escape(ctx.profile.host) << "); no op of the trace was run ("
    << p.aten_calls << " ATen calls while predicting).</p>\n";
  if (p.iter_with_host_ms >= 0) {
    o << "<p>With the original's recorded host time: " << duration(p.iter_with_host_ms * 1e3) << "</p>\n";
  }
  shareBar(o, p);
  o << "<p>" << p.ops << " ops: " << p.modelled << " modelled, " << p.fallback
    << " by bytes moved, " << p.skipped << " skipped (not in this libtorch); " << p.comms
    << " collectives.</p>\n<h2>Op kinds (rank 0)</h2><table><tr><th>op</th><th>count</th>"
    << "<th>predicted</th><th>model</th></tr>\n";
  std::vector<std::pair<std::string, KindPrediction>> kinds(p.kinds.begin(), p.kinds.end());
  std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
  for (const auto& [name, k] : kinds) {
    o << "<tr><td>" << escape(name) << "</td><td>" << k.count << "</td><td>" << duration(k.us)
      << "</td><td>" << escape(k.family) << "</td></tr>\n";
  }
  o << "</table>\n<h2>Ranks</h2><table><tr><th>rank</th><th>iteration</th><th>compute</th>"
    << "<th>communication</th><th>exposed</th></tr>\n";
  for (const RankPrediction& r : p.ranks) {
    o << "<tr><td>" << r.rank << "</td><td>" << duration(r.iter_us) << "</td><td>"
      << duration(r.compute_us) << "</td><td>" << duration(r.comm_us) << "</td><td>"
      << duration(r.exposed_comm_us) << "</td></tr>\n";
  }
  o << "</table></body></html>\n";
}

}  // namespace etb::predict
