// SPDX-License-Identifier: MIT
//
// Small helpers shared by the text and HTML reporters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replayer/replay_result.h"

namespace etb::replay::detail {

// "1.50 GiB", "512 B": binary units, three significant figures.
std::string formatBytes(uint64_t bytes);
// Fixed-point with `digits` decimals.
std::string formatFixed(double value, int digits);

// The unit a duration reads best in: µs below 1 ms, ms below 1 s, s above.
struct TimeUnit {
  const char* name;   // "µs", "ms", "s" (UTF-8)
  double us_per_unit; // 1, 1e3, 1e6
};
TimeUnit timeUnitFor(double us);
// A duration in microseconds in its unit, four significant figures at most:
// "118.6 s", "12.35 ms", "950.0 µs", "-3.500 ms". Non-finite: "-".
std::string formatDuration(double us);
// formatDuration, or "-" for a negative figure (the report's "not known").
std::string formatKnownDuration(double us);
// `text` right-aligned in `width` columns, counting UTF-8 characters (µ is
// two bytes but one column, which std::setw does not know).
std::string padLeft(const std::string& text, size_t width);

// What share of the original's median iteration was host time (the
// original's, before the replay's own time between ops is taken from it;
// %, -1 when either is unknown).
double hostSharePct(const ReplayResult& r);

// The kinds ordered for display: biggest |replay - original| first where
// the original is known, then the rest by replay time; ties by name so the
// order is deterministic.
std::vector<KindStat> kindsByDifference(const std::vector<KindStat>& kinds);

// Skipped reasons, most frequent first.
std::vector<std::pair<std::string, uint64_t>> reasonsByCount(
    const Coverage& coverage);

// Percentage of selected operators that were replayed (100 when none).
double coveragePct(const Coverage& coverage);

// Distribution over ranks of one per-rank figure.
struct RankSpread {
  double min = 0, median = 0, max = 0;
  int min_rank = 0, max_rank = 0;
};
RankSpread spreadOverRanks(const std::vector<RankResult>& ranks,
                           double (*figure)(const RankResult&));

}  // namespace etb::replay::detail
