// SPDX-License-Identifier: MIT
// Template bodies of interp.h.
#pragma once

#include <algorithm>
#include <utility>

namespace etb::predict {

template <size_t D>
double knnValue(const std::vector<KnnPoint<D>>& points, const std::array<double, D>& q,
                size_t k) {
  std::vector<std::pair<double, double>> dist;  // (squared distance, value)
  dist.reserve(points.size());
  for (const KnnPoint<D>& p : points) {
    double d = 0;
    for (size_t i = 0; i < D; ++i) d += (p.x[i] - q[i]) * (p.x[i] - q[i]);
    if (d < 1e-12) return p.value;
    dist.emplace_back(d, p.value);
  }
  if (dist.empty()) return 0;
  k = std::min(k, dist.size());
  // By distance alone, and every point as near as the k-th: a query midway
  // between grid lines in log space (2048 between 1024 and 4096, 128
  // between 64 and 256: common sizes) is equidistant from up to 2^D
  // corners, and ordering the pairs broke those ties by the lower value,
  // averaging the slowest corners (a 2048 x 2048 x 128 mm predicted 1.7x
  // its replayed time).
  const auto nearer = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::partial_sort(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(k), dist.end(), nearer);
  const double kth = dist[k - 1].first * (1 + 1e-9);
  double wsum = 0, vsum = 0;
  for (const auto& [d, value] : dist) {
    if (d > kth) continue;
    wsum += 1.0 / d;
    vsum += value / d;
  }
  return vsum / wsum;
}

}  // namespace etb::predict
