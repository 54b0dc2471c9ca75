// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace etb::replay {

// `count` Zipf(alpha) ranks over [0, n), drawn by inverse CDF: rank k has
// weight (k+1)^-alpha. The table is capped at 2^22 rows because the tail
// beyond a few million rows is almost never drawn. Shared by the replayer's
// index tensors and et_profile_hw's embedding measurements, so the predictor
// is calibrated on the distribution et_replay draws.
std::vector<int64_t> zipfSamples(int64_t n, double alpha, int64_t count, std::mt19937_64& rng);

}  // namespace etb::replay
