// SPDX-License-Identifier: MIT
#include "replayer/original_metrics.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace etb::replay {
namespace {
using nlohmann::json;

// A number field that may be absent or null; anything else is an error.
std::optional<double> number(const json& doc, const char* key, const std::string& path) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) {
    ETB_INPUT_ERROR(SourceLoc{path}, "metrics field \"", key, "\" is not a number");
  }
  return it->get<double>();
}

void readGpu(const json& doc, const std::string& path, SystemMetrics& m) {
  auto gpu = doc.find("gpu");
  if (gpu == doc.end() || gpu->is_null()) return;
  if (!gpu->is_object()) ETB_INPUT_ERROR(SourceLoc{path}, "metrics field \"gpu\" is not an object");
  m.gpu_util_pct = number(*gpu, "gpu_util_pct", path);
  if (auto mem = number(*gpu, "gpu_mem_bytes", path)) m.gpu_mem_bytes = static_cast<uint64_t>(*mem);
  m.gpu_power_w = number(*gpu, "gpu_power_w", path);
}
}  // namespace

OriginalSystem readOriginalMetrics(const std::string& path) {
  return parseOriginalMetrics(readFileMaybeGzip(path), path);
}

OriginalSystem parseOriginalMetrics(const std::string& text, const std::string& path) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    ETB_INPUT_ERROR(SourceLoc{path}, "not a JSON object (expected the recorder's metrics sidecar)");
  }
  const std::string schema = doc.value("schema", std::string());
  if (schema.rfind("etbench.metrics/", 0) != 0) {
    ETB_INPUT_ERROR(SourceLoc{path}, "no \"schema\": \"etbench.metrics/1\" (got \"", schema, "\")");
  }
  OriginalSystem o;
  o.source = path;
  o.metrics.cpu_util_pct = number(doc, "cpu_util_pct", path).value_or(-1);
  const double rss = number(doc, "peak_rss_bytes", path).value_or(0);
  if (rss < 0) ETB_INPUT_ERROR(SourceLoc{path}, "metrics field \"peak_rss_bytes\" is negative");
  o.metrics.peak_rss_bytes = static_cast<uint64_t>(rss);
  o.metrics.minor_faults_per_iter = number(doc, "minor_faults_per_step", path).value_or(-1);
  if (auto th = doc.find("threads"); th != doc.end() && th->is_object()) {
    o.threads = static_cast<int>(number(*th, "intra_op", path).value_or(-1));
    o.os_threads = static_cast<int>(number(*th, "os_threads", path).value_or(-1));
  }
  o.window = doc.value("window", std::string());
  o.same_process = doc.value("same_process_as_trace", true);
  readGpu(doc, path, o.metrics);
  if (auto p = doc.find("device_properties"); p != doc.end() && !p->is_null()) {
    o.device_properties = p->dump();
  }
  return o;
}

std::string metricsBesideTrace(const std::string& trace_path) {
  namespace fs = std::filesystem;
  std::string stem = trace_path;
  for (const char* ext : {".gz", ".json", ".et", ".pb"}) {
    const std::string e = ext;
    if (stem.size() > e.size() && stem.compare(stem.size() - e.size(), e.size(), e) == 0) {
      stem.resize(stem.size() - e.size());
    }
  }
  const std::string candidate = stem + ".metrics.json";
  std::error_code ec;
  return fs::is_regular_file(candidate, ec) ? candidate : "";
}

}  // namespace etb::replay
