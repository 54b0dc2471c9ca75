// SPDX-License-Identifier: MIT
#include "replayer/original_meta.h"

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/log.h"

namespace etb::replay {
namespace {
using nlohmann::json;

std::vector<double> metaIterMs(const json& original, const std::string& path) {
  std::vector<double> ms;
  if (original.contains("iter_ms") && original["iter_ms"].is_array()) {
    for (const json& x : original["iter_ms"]) {
      if (!x.is_number()) ETB_INPUT_ERROR(SourceLoc{path}, "\"original.iter_ms\" holds a non-number");
      ms.push_back(x.get<double>());
    }
  } else if (original.contains("iter_ms_median") && original["iter_ms_median"].is_number()) {
    ms.push_back(original["iter_ms_median"].get<double>());
  }
  if (ms.empty()) {
    ETB_INPUT_ERROR(SourceLoc{path}, "no \"original.iter_ms\" or \"original.iter_ms_median\"");
  }
  return ms;
}
}  // namespace

void useMeasuredOriginal(const std::vector<double>& iter_ms, ReplayOptions& options) {
  for (double ms : iter_ms) {
    if (!(ms > 0)) ETB_INPUT_ERROR(SourceLoc{"--original-ms"}, "expected times > 0 ms, got ", ms);
  }
  options.original_ms = iter_ms;
  options.original_source = "user";
}

void useOriginalMeta(const std::string& meta_path, ReplayOptions& options, int rank) {
  const json meta = json::parse(readFileMaybeGzip(meta_path), nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) ETB_INPUT_ERROR(SourceLoc{meta_path}, "not a JSON object");
  if (!meta.contains("original") || !meta["original"].is_object()) {
    ETB_INPUT_ERROR(SourceLoc{meta_path}, "no \"original\" object (the unprofiled steps)");
  }
  // A DDP sample: this rank's own plain steps (the top-level figure is the
  // slowest rank's median, which every rank would otherwise report).
  const std::string key = std::to_string(rank);
  const bool per_rank = meta.contains("ranks") && meta["ranks"].is_object() &&
                        meta["ranks"].contains(key) && meta["ranks"][key].is_object() &&
                        meta["ranks"][key].contains("original") &&
                        meta["ranks"][key]["original"].is_object();
  options.original_ms = metaIterMs(per_rank ? meta["ranks"][key]["original"] : meta["original"], meta_path);
  options.original_source = per_rank ? "meta.json rank " + key + " (unprofiled)" : "meta.json (unprofiled)";
  if (options.threads == 0 && meta.contains("threads") && meta["threads"].is_number_integer()) {
    options.threads = meta["threads"].get<int>();
    ETB_LOG(kInfo) << "threads " << options.threads << " as recorded (" << meta_path << ")";
  }
  if (meta.contains("instrumentation")) {
    const json& in = meta["instrumentation"];
    const auto cost = [&](const char* field) {
      if (!in.is_object() || !in.contains(field) || !in[field].is_number() ||
          in[field].get<double>() < 0) {
        ETB_INPUT_ERROR(SourceLoc{meta_path}, "\"instrumentation.", field,
                        "\" must be a number >= 0 (microseconds per event)");
      }
      return in[field].get<double>();
    };
    options.recorded_instrumentation =
        RecordedInstrumentation{cost("per_op_event_us"), cost("per_label_event_us")};
  }
}

}  // namespace etb::replay
