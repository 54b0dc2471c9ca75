// SPDX-License-Identifier: MIT
#include "predictor/interp.h"

#include <algorithm>
#include <cmath>

namespace etb::predict {

double curveUs(const std::vector<SizePoint>& c, double bytes) {
  if (c.empty()) return 0;
  if (bytes <= c.front().bytes) return c.front().us;
  if (bytes >= c.back().bytes) return c.back().us * bytes / c.back().bytes;
  const auto hi = std::upper_bound(c.begin(), c.end(), bytes,
                                   [](double b, const SizePoint& p) { return b < p.bytes; });
  const auto lo = hi - 1;
  const double f = std::log(bytes / lo->bytes) / std::log(hi->bytes / lo->bytes);
  return std::exp(std::log(lo->us) + f * (std::log(hi->us) - std::log(lo->us)));
}

double coldAfterUs(const std::vector<SizePoint>& c, double after_us) {
  if (c.empty() || after_us <= 0) return 0;
  if (after_us <= c.front().bytes) return c.front().us * after_us / c.front().bytes;
  if (after_us >= c.back().bytes) return c.back().us;
  const auto hi = std::upper_bound(c.begin(), c.end(), after_us,
                                   [](double b, const SizePoint& p) { return b < p.bytes; });
  const auto lo = hi - 1;
  const double f = std::log(after_us / lo->bytes) / std::log(hi->bytes / lo->bytes);
  return lo->us + f * (hi->us - lo->us);
}

}  // namespace etb::predict
