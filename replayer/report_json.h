// SPDX-License-Identifier: MIT
//
// The replay report as JSON, following schemas/report.schema.json, and the
// per-rank record the communication layer gathers on rank 0.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "replayer/replay_result.h"

namespace etb::replay {

// The whole report. `original` is present only when the original run's
// iteration time is known; unknown per-op or per-kind originals (-1) and
// absent GPU figures are left out rather than written as sentinels.
nlohmann::json reportToJson(const ReplayResult& result);

// Writes reportToJson() to `path` (gzip when it ends in ".gz"); throws
// RuntimeError when the file cannot be written.
void writeReportJson(const ReplayResult& result, const std::string& path);

// One rank's figures as a compact JSON string and back; fromJson throws
// RuntimeError naming the problem when the text is not such a record.
std::string rankResultToJson(const RankResult& rank);
RankResult rankResultFromJson(const std::string& text);

}  // namespace etb::replay
