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
  std::partial_sort(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(k), dist.end());
  double wsum = 0, vsum = 0;
  for (size_t i = 0; i < k; ++i) {
    const double w = 1.0 / dist[i].first;
    wsum += w;
    vsum += w * dist[i].second;
  }
  return vsum / wsum;
}

}  // namespace etb::predict
