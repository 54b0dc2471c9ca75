// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cmath>
#include <numeric>

#include "replayer/replay_result.h"

namespace etb::replay {
namespace {
// Linear interpolation between closest ranks (numpy's default), so the
// median of an even count is the mean of the two middle samples.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}
}  // namespace

double medianOf(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  return quantile(samples, 0.5);
}

Distribution summarize(std::vector<double> samples) {
  Distribution d;
  d.samples = std::move(samples);
  if (d.samples.empty()) return d;
  std::vector<double> sorted = d.samples;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  d.min = sorted.front();
  d.max = sorted.back();
  d.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  d.median = quantile(sorted, 0.5);
  d.p90 = quantile(sorted, 0.9);
  // Sample standard deviation (n - 1), as google-benchmark reports it; 0 for
  // a single sample.
  if (sorted.size() > 1) {
    double ss = 0;
    for (double x : sorted) ss += (x - d.mean) * (x - d.mean);
    d.stddev = std::sqrt(ss / (n - 1));
  }
  return d;
}

}  // namespace etb::replay
