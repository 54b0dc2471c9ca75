// SPDX-License-Identifier: MIT
// The cache model against the LRU rule worked by hand: a tensor re-read
// after more than the last-level cache of other traffic comes from DRAM,
// one re-read at once does not; the op models then read the "@cold" curves
// for that share, less the flush's fixed cost (code evicted with the data).
#include <gtest/gtest.h>

#include "predictor/op_model.h"
#include "predictor/reuse_model.h"
#include "replayer/op_selection.h"
#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::TraceBuilder;
constexpr double kMiB = 1024.0 * 1024;
const char* kRelu = "aten::relu(Tensor self) -> Tensor";

TEST(ReuseModel, ATensorReadAfterMoreThanTheCacheOfOtherTrafficIsCold) {
  TraceBuilder b;
  const auto x = b.tensor({256 * 1024}), y = b.tensor({256 * 1024});  // 1 MiB each
  b.op(kRelu, {x}, {y});
  const auto y2 = b.tensor({256 * 1024});
  b.op(kRelu, {y}, {y2});  // y at once: warm
  const auto big = b.tensor({16 * 1024 * 1024}), total = b.tensor({});  // 64 MiB summed
  b.op("aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
       {big, trace::makeNone(b.trace())}, {total});
  const auto y3 = b.tensor({256 * 1024});
  b.op(kRelu, {y}, {y3});  // y after 64 MiB of other traffic: cold
  const trace::Trace t = b.finish();
  const auto sel = replay::selectNodes(t, replay::chooseIteration(t, 0));
  const std::vector<double> cold = coldInputShare(t, sel, 32 * kMiB);
  ASSERT_EQ(cold.size(), 4u);
  EXPECT_DOUBLE_EQ(cold[1], 0);
  EXPECT_DOUBLE_EQ(cold[3], 1);
  // big: last read one iteration ago; since then the distinct tensors x, y,
  // y2, y3 (1 MiB each) and the 4-byte sum: 28 MiB of it still cached.
  EXPECT_NEAR(cold[2], (36 * kMiB + 4) / (64 * kMiB), 1e-9);
  // No cache size known: everything warm.
  for (double c : coldInputShare(t, sel, 0)) EXPECT_EQ(c, 0);
}

TEST(ReuseModel, ColdInputsReadTheFlushedCurveLessItsFixedCost) {
  HwProfile hw;
  hw.dispatch_us = 1;
  hw.view_us = 0.5;
  hw.bandwidth["unary"] = {{1000, 2}, {8000, 10}};
  hw.bandwidth["unary@cold"] = {{1000, 12}, {8000, 40}};  // flush: +10 us fixed
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto a = b.tensor({1000}), r = b.tensor({1000});  // 4000 + 4000 bytes
  b.op(kRelu, {a}, {r});
  const trace::Trace t = b.finish();
  EXPECT_NEAR(model.estimate(t, t.nodes[2], 0).us, 10, 1e-9);
  // (40 - 10) - (12 - 2) = 20 us more when all of it comes from DRAM.
  EXPECT_NEAR(model.estimate(t, t.nodes[2], 1).us, 30, 1e-9);
  EXPECT_NEAR(model.estimate(t, t.nodes[2], 0.5).us, 20, 1e-9);
}

TEST(OpModel, SpecialFunctionsReadTheirOwnCurveAndActivationGradientsAreArithmetic) {
  HwProfile hw;
  hw.dispatch_us = 1;
  hw.view_us = 0.5;
  hw.bandwidth["transcendental"] = {{1000, 50}, {8000, 400}};
  hw.bandwidth["op:exp"] = {{1000, 5}, {8000, 40}};
  hw.bandwidth["elementwise"] = {{1000, 2}, {12000, 24}};
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto a = b.tensor({1000}), e = b.tensor({1000});
  b.op("aten::exp(Tensor self) -> Tensor", {a}, {e});
  b.op("aten::sigmoid(Tensor self) -> Tensor", {a}, {e});  // no curve of its own
  const auto g = b.tensor({1000}), gi = b.tensor({1000});
  b.op("aten::tanh_backward(Tensor grad_output, Tensor output) -> Tensor", {g, e}, {gi});
  const trace::Trace t = b.finish();
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 40, 1e-9);
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 400, 1e-9);
  const OpEstimate back = model.estimate(t, t.nodes[4]);
  EXPECT_FALSE(back.fallback);
  EXPECT_NEAR(back.us, 24, 1e-9);  // 12000 bytes on the elementwise curve
}

// A, B, A, C, C, B repeating, the other kinds since each call's kind last
// ran, counted by hand (the previous iteration's calls where a kind is first
// in this one): A after C, C, B of the last iteration: 2; B after A: 1; A
// after B: 1; C after B, A, B, A: 2; C right after C: 0; B after A, C, C: 2.
// Catches the first call of a kind counted from the iteration's start (A:
// 0), counted as calls rather than kinds (C: 4), or the same kind counted.
TEST(ReuseModel, AKindsCodeReuseDistanceCountsTheOtherKindsSinceItLastRan) {
  EXPECT_EQ(kindReuseDistance({"A", "B", "A", "C", "C", "B"}), (std::vector<int>{2, 1, 1, 2, 0, 2}));
  EXPECT_EQ(kindReuseDistance({"A"}), (std::vector<int>{0}));
  EXPECT_TRUE(kindReuseDistance({}).empty());
}

}  // namespace
}  // namespace etb::predict
