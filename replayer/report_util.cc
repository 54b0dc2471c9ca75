// SPDX-License-Identifier: MIT
#include "replayer/report_util.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

namespace etb::replay::detail {

std::string formatFixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

TimeUnit timeUnitFor(double us) {
  const double a = std::abs(us);
  if (a >= 1e6) return {"s", 1e6};
  if (a >= 1e3) return {"ms", 1e3};
  return {"\u00b5s", 1};
}

std::string formatDuration(double us) {
  if (!std::isfinite(us)) return "-";
  const TimeUnit unit = timeUnitFor(us);
  const double v = us / unit.us_per_unit;
  const double a = std::abs(v);
  // Rounding may carry into the next unit (999.96 µs -> "1000.0 µs"): say 1.000 ms.
  const int digits = a >= 99.995 ? 1 : a >= 9.9995 ? 2 : 3;
  if (std::abs(std::stod(formatFixed(v, digits))) >= 1000 && unit.us_per_unit < 1e6) {
    return formatDuration(us < 0 ? -1000 * unit.us_per_unit : 1000 * unit.us_per_unit);
  }
  return formatFixed(v, digits) + " " + unit.name;
}

std::string formatKnownDuration(double us) { return us >= 0 ? formatDuration(us) : std::string("-"); }

std::string padLeft(const std::string& text, size_t width) {
  size_t columns = 0;
  for (unsigned char c : text) columns += (c & 0xC0) != 0x80;
  return columns >= width ? text : std::string(width - columns, ' ') + text;
}

double hostSharePct(const ReplayResult& r) {
  if (!r.host_time || !r.original_iter_ms || r.original_iter_ms->median <= 0) return -1;
  return 100.0 * r.host_time->original_host_ms / r.original_iter_ms->median;
}

std::string formatBytes(uint64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits{"B",   "KiB", "MiB",
                                                     "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " B";
  const int digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return formatFixed(value, digits) + " " + kUnits[unit];
}

std::vector<KindStat> kindsByDifference(const std::vector<KindStat>& kinds) {
  std::vector<KindStat> sorted = kinds;
  auto key = [](const KindStat& k) {
    const bool known = k.original_us >= 0;
    const double size =
        known ? std::abs(k.replay_us - k.original_us) : k.replay_us;
    return std::make_pair(known ? 0 : 1, -size);
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const KindStat& a, const KindStat& b) {
                     const auto ka = key(a), kb = key(b);
                     if (ka != kb) return ka < kb;
                     return a.name < b.name;
                   });
  return sorted;
}

std::vector<std::pair<std::string, uint64_t>> reasonsByCount(
    const Coverage& coverage) {
  std::vector<std::pair<std::string, uint64_t>> out(
      coverage.skipped_by_reason.begin(), coverage.skipped_by_reason.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second > b.second;
  });
  return out;
}

double coveragePct(const Coverage& coverage) {
  if (coverage.operators == 0) return 100.0;
  return 100.0 * static_cast<double>(coverage.replayed) /
         static_cast<double>(coverage.operators);
}

RankSpread spreadOverRanks(const std::vector<RankResult>& ranks,
                           double (*figure)(const RankResult&)) {
  RankSpread s;
  if (ranks.empty()) return s;
  std::vector<std::pair<double, int>> values;
  for (const RankResult& r : ranks) values.emplace_back(figure(r), r.rank);
  std::sort(values.begin(), values.end());
  s.min = values.front().first;
  s.min_rank = values.front().second;
  s.max = values.back().first;
  s.max_rank = values.back().second;
  std::vector<double> only;
  for (const auto& v : values) only.push_back(v.first);
  s.median = summarize(only).median;
  return s;
}

}  // namespace etb::replay::detail
