// SPDX-License-Identifier: MIT
#include "replayer/zipf.h"

#include <algorithm>
#include <cmath>

namespace etb::replay {

std::vector<int64_t> zipfSamples(int64_t n, double alpha, int64_t count, std::mt19937_64& rng) {
  const int64_t m = std::min<int64_t>(n, int64_t{1} << 22);
  std::vector<double> cdf(static_cast<size_t>(m));
  double sum = 0;
  for (int64_t k = 0; k < m; ++k) cdf[static_cast<size_t>(k)] = sum += std::pow(k + 1.0, -alpha);
  std::uniform_real_distribution<double> u(0, sum);
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (auto& x : out) x = std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin();
  return out;
}

}  // namespace etb::replay
