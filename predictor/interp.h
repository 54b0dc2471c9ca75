// SPDX-License-Identifier: MIT
//
// Interpolation over measured points, the two shapes the op models need:
// a size curve (bytes -> time, log-log piecewise linear) and a nearest-
// neighbour estimate in log2 shape space (GEMM, conv, embedding).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "predictor/hw_profile.h"

namespace etb::predict {

// Time of a kernel moving `bytes` on a measured curve: log-log linear
// between points; below the first point its time (the latency floor);
// beyond the last, that point's bandwidth (time grows linearly). 0 for an
// empty curve. `curve` must be in increasing bytes (sortCurves does it once
// at load; sorting here on every call cost more than the lookup).
double curveUs(const std::vector<SizePoint>& curve, double bytes);

// The extra cost of an op call after `after_us` of other work
// (HwProfile::cold_after, sorted): linear in log(after_us) between the
// measured stretches, in proportion below the shortest, and the longest's
// beyond it (the caches can lose no more than all of it). 0 when empty.
double coldAfterUs(const std::vector<SizePoint>& curve, double after_us);

// The extra cost of an op call after `kinds` other kinds of ops ran since
// its own kind did (HwProfile::cold_kinds, sorted): the same shape, 0 for
// none (the same kind back to back), linear in log(kinds) between points,
// the last point's beyond (the caches can lose no more than all of it).
inline double coldKindsUs(const std::vector<SizePoint>& curve, double kinds) {
  return coldAfterUs(curve, kinds);
}

// A measured point in log2 feature space with a value (log of throughput).
template <size_t D>
struct KnnPoint {
  std::array<double, D> x;
  double value = 0;
};

// Inverse-squared-distance weighted mean of the `k` nearest points' values
// (an exact hit returns its value). The model of choice where throughput
// varies smoothly with shape but not along one axis alone (skinny GEMMs).
template <size_t D>
double knnValue(const std::vector<KnnPoint<D>>& points, const std::array<double, D>& q,
                size_t k = 4);

}  // namespace etb::predict

#include "predictor/interp_inl.h"
