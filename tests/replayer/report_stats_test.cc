// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cmath>

#include "replayer/replay_result.h"

namespace etb::replay {
namespace {

TEST(Summarize, KnownSamplesMatchTextbookFormulas) {
  // 1..10 shuffled: mean 5.5, median the mean of 5 and 6, p90 by linear
  // interpolation (numpy's default) at rank 0.9 * 9 = 8.1 -> 9 + 0.1 = 9.1,
  // sample stddev sqrt(sum (x - 5.5)^2 / 9) = sqrt(82.5 / 9).
  const std::vector<double> xs{7, 1, 4, 10, 2, 9, 3, 8, 6, 5};
  const Distribution d = summarize(xs);
  EXPECT_EQ(d.samples, xs);  // measurement order kept
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 10);
  EXPECT_DOUBLE_EQ(d.mean, 5.5);
  EXPECT_DOUBLE_EQ(d.median, 5.5);
  EXPECT_NEAR(d.p90, 9.1, 1e-12);
  EXPECT_NEAR(d.stddev, std::sqrt(82.5 / 9), 1e-12);
}

TEST(Summarize, OddCountMedianIsTheMiddleSample) {
  const Distribution d = summarize({3.0, 100.0, 1.0, 2.0, 50.0});
  EXPECT_DOUBLE_EQ(d.median, 3.0);
  EXPECT_DOUBLE_EQ(d.mean, 156.0 / 5);
  // rank 0.9 * 4 = 3.6 between 50 and 100
  EXPECT_NEAR(d.p90, 50 + 0.6 * 50, 1e-12);
}

TEST(Summarize, SingleSampleHasZeroSpread) {
  const Distribution d = summarize({4.25});
  EXPECT_DOUBLE_EQ(d.min, 4.25);
  EXPECT_DOUBLE_EQ(d.max, 4.25);
  EXPECT_DOUBLE_EQ(d.median, 4.25);
  EXPECT_DOUBLE_EQ(d.p90, 4.25);
  EXPECT_DOUBLE_EQ(d.stddev, 0);
}

TEST(Summarize, EmptyIsAllZero) {
  const Distribution d = summarize({});
  EXPECT_TRUE(d.samples.empty());
  EXPECT_EQ(d.median, 0);
  EXPECT_EQ(d.stddev, 0);
}

}  // namespace
}  // namespace etb::replay
