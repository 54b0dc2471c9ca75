// SPDX-License-Identifier: MIT
// The op models against closed forms: a shape that the profile measured
// exactly must predict the measured time; interpolation must follow its
// stated rule. Expected values come from the hand-made profile below, not
// from the model.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "predictor/hw_bench.h"
#include "predictor/interp.h"
#include "predictor/layout_model.h"
#include "predictor/op_model.h"
#include "tests/predictor/profile_test_util.h"
#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::TraceBuilder;
using trace::DType;

HwProfile handProfile() {
  HwProfile hw;
  hw.dispatch_us = 1.0;
  hw.view_us = 0.5;
  hw.gemm = {{1, 64, 32, 128, 40.0}, {1, 256, 256, 256, 900.0}, {1, 16, 16, 16, 2.0},
             {1, 1024, 64, 512, 3000.0}};
  hw.conv = {{2, 8, 16, 16, 16, 3, 3, 1, 1, 100.0, 160.0, 70.0}};
  hw.bandwidth["unary"] = {{1000, 2}, {4000, 4}, {16000, 8}};
  hw.bandwidth["elementwise"] = {{1500, 3}, {6000, 6}};
  return hw;
}

TEST(Interp, CurveIsLogLogLinearBetweenPointsAndLinearBeyond) {
  const std::vector<SizePoint> c = {{1000, 2}, {4000, 4}, {16000, 8}};
  EXPECT_DOUBLE_EQ(curveUs(c, 1000), 2);
  EXPECT_NEAR(curveUs(c, 2000), 2 * std::sqrt(2.0), 1e-9);  // halfway in log-log
  EXPECT_DOUBLE_EQ(curveUs(c, 10), 2);                       // latency floor
  EXPECT_DOUBLE_EQ(curveUs(c, 32000), 16);                   // last bandwidth
}

// Linear in log(after) between points, in proportion below the first, flat
// beyond the last (the caches cannot lose more than everything). Catches
// the byte curves' log-log rule (3.46 at 316), their linear growth beyond
// the last point (30 at 5000), or the floor below the first (2 at 50).
TEST(Interp, ColdAfterIsLogLinearProportionalBelowAndFlatBeyond) {
  const std::vector<SizePoint> c = {{100, 2}, {1000, 6}};
  EXPECT_DOUBLE_EQ(coldAfterUs(c, 100), 2);
  EXPECT_NEAR(coldAfterUs(c, std::sqrt(100.0 * 1000)), 4, 1e-9);
  EXPECT_DOUBLE_EQ(coldAfterUs(c, 50), 1);
  EXPECT_DOUBLE_EQ(coldAfterUs(c, 5000), 6);
  EXPECT_DOUBLE_EQ(coldAfterUs(c, 0), 0);
  EXPECT_DOUBLE_EQ(coldAfterUs({}, 500), 0);
}

TEST(Interp, KnnReturnsAnExactHitAndAveragesEquidistantNeighbours) {
  const std::vector<KnnPoint<2>> pts = {{{0, 0}, 1.0}, {{2, 0}, 3.0}, {{10, 10}, 100.0}};
  EXPECT_DOUBLE_EQ(knnValue(pts, {0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(knnValue(pts, {1, 0}, 2), 2.0);
}

// A query at the centre of a grid cell (a size midway between grid lines in
// log space, as 2048 between 1024 and 4096) is as near to each corner: all
// of them count, whatever k and their values (before, ties went to the
// lowest values: the slowest corners).
TEST(Interp, KnnTakesEveryCornerAsNearAsTheKthWhateverTheirValues) {
  const std::vector<KnnPoint<2>> cell = {
      {{0, 0}, 10.0}, {{2, 0}, 2.0}, {{0, 2}, 3.0}, {{2, 2}, 1.0}, {{6, 6}, 50.0}};
  EXPECT_DOUBLE_EQ(knnValue(cell, {1, 1}, 2), (10.0 + 2.0 + 3.0 + 1.0) / 4);
  EXPECT_DOUBLE_EQ(knnValue(cell, {1, 1}, 4), (10.0 + 2.0 + 3.0 + 1.0) / 4);
  // Off centre the nearer corners weigh more, and k still bounds the rest.
  const double w0 = 1 / 0.5, w1 = 1 / 2.5;  // squared distances from (0.5, 0.5)
  EXPECT_NEAR(knnValue(cell, {0.5, 0.5}, 3), (w0 * 10 + w1 * 2 + w1 * 3) / (w0 + 2 * w1), 1e-12);
}

TEST(OpModel, GemmAtAMeasuredShapePredictsTheMeasuredTime) {
  const HwProfile hw = handProfile();
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto a = b.tensor({64, 128}), w = b.tensor({128, 32}), y = b.tensor({64, 32});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {a, w}, {y});
  // linear: x[4, 16, 128] @ w[32, 128]^T is the GEMM m = 64, n = 32, k = 128.
  const auto x = b.tensor({4, 16, 128}), lw = b.tensor({32, 128}), ly = b.tensor({4, 16, 32});
  b.op("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
       {x, lw, trace::makeNone(b.trace())}, {ly});
  const trace::Trace t = b.finish();
  for (size_t i = 2; i < 4; ++i) {
    const OpEstimate e = model.estimate(t, t.nodes[i]);
    EXPECT_EQ(e.family, "gemm");
    EXPECT_NEAR(e.us, 40.0, 1e-6) << t.str(t.nodes[i].name);
  }
}

// A B passed transposed (linear's weight; mm's mat2 made by t()) reads the
// profile's gemm_nt points, where it has them; A transposed, or B made
// contiguous again by a second t(), reads the plain grid. Expected: the
// hand profile's points (40 us plain, 100 us with B transposed). Catches
// linear's weight taken as contiguous, the layout bit read from the wrong
// argument (addmm's mat2 is argument 2), and a profile without the points
// priced at zero or refused.
TEST(OpModel, AGemmWhoseBIsTransposedReadsTheTransposedGrid) {
  HwProfile hw = handProfile();
  hw.gemm_nt = {{1, 64, 32, 128, 100.0}, {1, 256, 256, 256, 1000.0}, {1, 16, 16, 16, 3.0},
                {1, 1024, 64, 512, 3500.0}};
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  trace::Trace& tr = b.trace();
  const char* kT = "aten::t(Tensor(a) self) -> Tensor(a)";
  const char* kMm = "aten::mm(Tensor self, Tensor mat2) -> Tensor";
  const auto a = b.tensor({64, 128}), w = b.tensor({32, 128}), wt = b.tensor({128, 32});
  const auto wtt = b.tensor({32, 128}), bias = b.tensor({32});
  b.op(kT, {w}, {wt});                                   // node 2
  b.op(kMm, {a, wt}, {b.tensor({64, 32})});              // 3: B transposed
  b.op("aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       {bias, a, wt}, {b.tensor({64, 32})});             // 4: mat2 is argument 2
  b.op(kT, {wt}, {wtt});                                 // 5: back to row-major
  const auto at = b.tensor({128, 64}), att = b.tensor({64, 128});
  b.op(kT, {at}, {att});                                 // 6
  b.op(kMm, {att, b.tensor({128, 32})}, {b.tensor({64, 32})});  // 7: A transposed only
  const auto x = b.tensor({4, 16, 128});
  b.op("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
       {x, w, trace::makeNone(tr)}, {b.tensor({4, 16, 32})});  // 8
  b.op(kT, {wtt}, {b.tensor({128, 32})});                // 9: reads a plain wtt
  for (trace::TensorRef& r : tr.tensors) r.has_strides = false;
  const trace::Trace t = b.finish();
  const std::vector<uint32_t> bits = transposedInputs(t);
  const auto cost = [&](size_t i) { return model.estimate(t, t.nodes[i], 0, 0, 0, bits[i]); };
  EXPECT_EQ(bits[3], 1u << 1);
  EXPECT_EQ(bits[4], 1u << 2);
  EXPECT_EQ(bits[7], 1u << 0);
  EXPECT_EQ(bits[9], 0u);
  EXPECT_NEAR(cost(3).us, 100.0, 1e-6);
  EXPECT_EQ(cost(3).family, "gemm_nt");
  EXPECT_NEAR(cost(4).us, 100.0, 1e-6);
  EXPECT_NEAR(cost(7).us, 40.0, 1e-6);
  EXPECT_EQ(cost(7).family, "gemm");
  EXPECT_NEAR(cost(8).us, 100.0, 1e-6);
  // An older profile: every GEMM on the plain grid.
  const OpModel plain(handProfile(), "uniform");
  EXPECT_NEAR(plain.estimate(t, t.nodes[8], 0, 0, 0, bits[8]).us, 40.0, 1e-6);
  EXPECT_EQ(plain.estimate(t, t.nodes[3], 0, 0, 0, bits[3]).family, "gemm");
  // The points survive the profile's JSON; an older profile has none.
  const HwProfile back = profileFromJson(profileToJson(hw), "hw.json");
  ASSERT_EQ(back.gemm_nt.size(), hw.gemm_nt.size());
  EXPECT_EQ(back.gemm_nt[0].us, 100.0);
  EXPECT_TRUE(profileFromJson(profileToJson(handProfile()), "hw.json").gemm_nt.empty());
}

// A reduced-precision GEMM whose B is transposed reads the transposed
// points of its own type: without native bfloat16 a CPU's bfloat16 mm of
// W.t() ran 2.4-3.3x as long as one of a contiguous B. Expected: the hand
// profile's points (float32 40 plain, 100 transposed; bfloat16 400 and
// 1200). A profile with float32's transposed points alone (before
// 2026-12-07) keeps pricing bfloat16 on its plain points, never on
// float32's transposed ones; float16, unmeasured, reads float32's. Catches
// the transposed table read without its type (100 for the bfloat16 mm), the
// types mixed in one table, and an older profile moved onto float32's rates.
TEST(OpModel, AReducedTypeGemmWhoseBIsTransposedReadsItsOwnTransposedPoints) {
  HwProfile hw = handProfile();
  hw.gemm.push_back({1, 64, 32, 128, 400.0, "bfloat16"});
  hw.gemm.push_back({1, 256, 256, 256, 900.0, "bfloat16"});
  hw.gemm_nt = {{1, 64, 32, 128, 100.0}, {1, 256, 256, 256, 1000.0}, {1, 16, 16, 16, 3.0},
                {1, 1024, 64, 512, 3500.0}};
  HwProfile older = hw;
  hw.gemm_nt.push_back({1, 64, 32, 128, 1200.0, "bfloat16"});
  hw.gemm_nt.push_back({1, 256, 256, 256, 2700.0, "bfloat16"});
  TraceBuilder b;
  const char* kT = "aten::t(Tensor(a) self) -> Tensor(a)";
  const char* kMm = "aten::mm(Tensor self, Tensor mat2) -> Tensor";
  for (const DType d : {DType::kBFloat16, DType::kFloat, DType::kHalf}) {
    const auto w = b.tensor({32, 128}, d), wt = b.tensor({128, 32}, d);
    b.op(kT, {w}, {wt});                                                      // nodes 2, 5, 8
    b.op(kMm, {b.tensor({64, 128}, d), wt}, {b.tensor({64, 32}, d)});         // 3, 6, 9: B transposed
    b.op(kMm, {b.tensor({64, 128}, d), b.tensor({128, 32}, d)}, {b.tensor({64, 32}, d)});  // 4, 7, 10
  }
  trace::Trace& tr = b.trace();
  for (trace::TensorRef& r : tr.tensors) r.has_strides = false;
  const trace::Trace t = b.finish();
  const std::vector<uint32_t> bits = transposedInputs(t);
  const auto cost = [&](const OpModel& m, size_t i) { return m.estimate(t, t.nodes[i], 0, 0, 0, bits[i]); };
  const OpModel model(hw, "uniform"), old(older, "uniform");
  const std::tuple<size_t, double, const char*, double, const char*> expected[] = {
      {3, 1200.0, "gemm_nt:bfloat16", 400.0, "gemm:bfloat16"},
      {4, 400.0, "gemm:bfloat16", 400.0, "gemm:bfloat16"},
      {6, 100.0, "gemm_nt", 100.0, "gemm_nt"},
      {7, 40.0, "gemm", 40.0, "gemm"},
      {9, 100.0, "gemm_nt", 100.0, "gemm_nt"}};
  for (const auto& [node, us, family, old_us, old_family] : expected) {
    EXPECT_NEAR(cost(model, node).us, us, 1e-6) << node;
    EXPECT_EQ(cost(model, node).family, family) << node;
    EXPECT_NEAR(cost(old, node).us, old_us, 1e-6) << node;
    EXPECT_EQ(cost(old, node).family, old_family) << node;
  }
  // The type of each transposed point is written and read back.
  const HwProfile back = profileFromJson(profileToJson(hw), "hw.json");
  ASSERT_EQ(back.gemm_nt.size(), hw.gemm_nt.size());
  EXPECT_EQ(back.gemm_nt.back().dtype, "bfloat16");
}

// A GEMM is costed at the rates of the type it computes in: its output's
// (an autocast linear mixes a bfloat16 activation with float32 weights and
// writes bfloat16). The profile's bfloat16 point of the same shape is 10x
// the float32 one; float16 was not measured, so a float16 GEMM reads
// float32's. Catches the type read from the first input (the mixed
// linear), bfloat16 points mixed into float32's table (the float32 mm would
// move off 40), and a missing type left without a table (0 or dispatch).
TEST(OpModel, AGemmReadsThePointsOfTheTypeItComputesIn) {
  HwProfile hw = handProfile();
  hw.gemm.push_back({1, 64, 32, 128, 400.0, "bfloat16"});
  hw.gemm.push_back({1, 256, 256, 256, 90.0, "bfloat16"});
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const std::string mm = "aten::mm(Tensor self, Tensor mat2) -> Tensor";
  for (const DType d : {DType::kFloat, DType::kBFloat16, DType::kHalf}) {
    b.op(mm, {b.tensor({64, 128}, d), b.tensor({128, 32}, d)}, {b.tensor({64, 32}, d)});
  }
  b.op("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
       {b.tensor({64, 128}, DType::kFloat), b.tensor({32, 128}, DType::kFloat), b.tensor({32}, DType::kFloat)},
       {b.tensor({64, 32}, DType::kBFloat16)});
  const trace::Trace t = b.finish();
  const std::pair<double, const char*> expected[] = {
      {40.0, "gemm"}, {400.0, "gemm:bfloat16"}, {40.0, "gemm"}, {400.0, "gemm:bfloat16"}};
  for (size_t i = 0; i < 4; ++i) {
    const OpEstimate e = model.estimate(t, t.nodes[2 + i]);
    EXPECT_NEAR(e.us, expected[i].first, 1e-6) << i;
    EXPECT_EQ(e.family, expected[i].second) << i;
  }
}

// A point's type is written and read back; a point without one (profiles
// before it) is float32.
TEST(HwProfile, GemmTypesRoundTripAndAbsentMeansFloat32) {
  HwProfile hw = handProfile();
  hw.gemm.push_back({1, 64, 32, 128, 400.0, "bfloat16"});
  hw.bmm = {{4, 16, 16, 16, 5.0, "float16"}};
  const HwProfile back = profileFromJson(profileToJson(hw), "hw.json");
  ASSERT_EQ(back.gemm.size(), hw.gemm.size());
  EXPECT_EQ(back.gemm.front().dtype, "float32");
  EXPECT_EQ(back.gemm.back().dtype, "bfloat16");
  ASSERT_EQ(back.bmm.size(), 1u);
  EXPECT_EQ(back.bmm[0].dtype, "float16");
  nlohmann::json j = nlohmann::json::parse(profileToJson(hw));
  j["gemm"][0].erase("dtype");
  EXPECT_EQ(profileFromJson(j.dump(), "hw.json").gemm[0].dtype, "float32");
}

TEST(OpModel, ConvUsesItsImplicitGemmShapeAndTheBackwardMask) {
  const HwProfile hw = handProfile();
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto x = b.tensor({2, 8, 16, 16}), w = b.tensor({16, 8, 3, 3}), y = b.tensor({2, 16, 16, 16});
  b.op("aten::convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, SymInt[] padding, "
       "int[] dilation, bool transposed, SymInt[] output_padding, int groups) -> Tensor",
       {x, w, trace::makeNone(b.trace())}, {y});
  trace::Value mask;
  mask.kind = trace::ValueKind::kList;
  mask.items = {trace::makeBool(b.trace(), false), trace::makeBool(b.trace(), true),
                trace::makeBool(b.trace(), false)};
  std::vector<trace::Value> in = {y, x, w};
  while (in.size() < 10) in.push_back(trace::makeNone(b.trace()));
  in.push_back(mask);
  b.op("aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, ...)", in, {w});
  const trace::Trace t = b.finish();
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 100.0, 1e-6);
  // Only grad_weight asked for: the measured weight half, not the input half
  // (160) nor both (230).
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 70.0, 1e-6);
}

TEST(OpModel, BernoulliReadsTheCurveOfTheNearestMeasuredProbability) {
  HwProfile hw = handProfile();
  hw.bandwidth[rngCurve(0.5)] = {{1000, 50}, {4000, 200}};
  hw.bandwidth[rngCurve(0.9)] = {{1000, 20}, {4000, 80}};
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto m = b.tensor({500});  // 2000 bytes in place: self in + out = 4000
  b.op("aten::bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)",
       {m, trace::makeDouble(b.trace(), 0.85), trace::makeNone(b.trace())}, {m});
  b.op("aten::bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)",
       {m, trace::makeDouble(b.trace(), 0.4), trace::makeNone(b.trace())}, {m});
  const trace::Trace t = b.finish();
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:rng");
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 80.0, 1e-9);   // dropout(0.1)'s p = 0.9
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 200.0, 1e-9);
}

TEST(OpModel, CurvesLeaveOutTheFirstTouchOfOutputsTheBenchmarkMapped) {
  HwProfile hw = handProfile();
  hw.memory = {4096, 2.0};
  // relu over 48 MiB in + 48 MiB out: glibc maps a 48 MiB output afresh on
  // every call, so 12288 faulted pages (2 us each) are in the measurement.
  const double big = 96.0 * 1024 * 1024, pages = 48.0 * 1024 * 1024 / 4096;
  hw.bandwidth["unary"] = {{1000, 2}, {big, 10000 + 2.0 * pages}};
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto a = b.tensor({12 * 1024 * 1024}), r = b.tensor({12 * 1024 * 1024});
  b.op("aten::relu(Tensor self) -> Tensor", {a}, {r});
  const trace::Trace t = b.finish();
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 10000, 1e-6);
}

TEST(OpModel, AForeachLoopIsAPerTensorCostPlusItsBytesOnTheInPlaceCurve) {
  HwProfile hw = handProfile();
  // in-place curve: 1 us per 1000 bytes; lists measured as exactly
  // 3 us + 0.5 us per tensor + the curve at 12 bytes per element.
  hw.bandwidth["inplace"] = {{1000, 1}, {1e9, 1e6}};
  for (int64_t tensors : {4, 32, 128}) {
    for (int64_t elems : {int64_t{1000}, int64_t{1000000}}) {
      hw.foreach_ops.push_back({tensors, elems, 3 + 0.5 * tensors + 12.0 * elems / 1000});
    }
  }
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  trace::Value xs, ys;
  xs.kind = ys.kind = trace::ValueKind::kList;
  for (int i = 0; i < 10; ++i) {
    xs.items.push_back(b.tensor({250}));  // 10 x 1000 bytes per list
    ys.items.push_back(b.tensor({250}));
  }
  b.op("aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
       {xs, ys, trace::makeDouble(b.trace(), 1.0)}, {});
  const trace::Trace t = b.finish();
  // Recorded bytes: the two lists read (20000); the curve gives 20 us.
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 3 + 0.5 * 10 + 20, 1e-6);
}

// Each _foreach_ overload timed has its own per-tensor cost, fitted on
// the bytes the profile says a trace records for it; an overload not timed
// takes _foreach_mul_.Scalar's when it is one list and a number, else
// _foreach_add_.List's. The points keep their op and bytes through JSON.
TEST(OpModel, EachForeachOverloadCostsItsOwnPerTensor) {
  HwProfile hw = handProfile();
  hw.bandwidth["inplace"] = {{1000, 1}, {1e9, 1e6}};  // 1 us per 1000 bytes
  for (int64_t tensors : {4, 32, 128}) {
    for (int64_t elems : {int64_t{1000}, int64_t{1000000}}) {
      hw.foreach_ops.push_back({tensors, elems, 3 + 0.5 * tensors + 12.0 * elems / 1000});
      // One list read and written, recorded as its 4 bytes an element.
      hw.foreach_ops.push_back({tensors, elems, 2 + 1.6 * tensors + 4.0 * elems / 1000,
                                "aten::_foreach_mul_.Scalar", 4.0 * elems});
    }
  }
  const HwProfile back = profileFromJson(profileToJson(hw), "hand.json");
  ASSERT_EQ(back.foreach_ops.size(), hw.foreach_ops.size());
  EXPECT_EQ(back.foreach_ops[1].op, "aten::_foreach_mul_.Scalar");
  EXPECT_DOUBLE_EQ(back.foreach_ops[1].bytes, 4000);
  EXPECT_EQ(back.foreach_ops[0].op, "aten::_foreach_add_.List");
  const OpModel model(back, "uniform");
  TraceBuilder b;
  const auto list = [&] {
    trace::Value xs;
    xs.kind = trace::ValueKind::kList;
    for (int i = 0; i < 10; ++i) xs.items.push_back(b.tensor({250}));  // 10 x 1000 bytes
    return xs;
  };
  const trace::Value one = trace::makeDouble(b.trace(), 1.0);
  b.op("aten::_foreach_mul_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()", {list(), one}, {});
  b.op("aten::_foreach_sub_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()", {list(), one}, {});
  b.op("aten::_foreach_lerp_.Scalar(Tensor(a!)[] self, Tensor[] tensors1, Scalar weight) -> ()",
       {list(), list(), one}, {});
  b.op("aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
       {list(), list(), one}, {});
  const trace::Trace t = b.finish();
  std::vector<double> us;
  for (const trace::Node& n : t.nodes) {
    if (t.str(n.op_schema).rfind("aten::_foreach_", 0) == 0) us.push_back(model.estimate(t, n).us);
  }
  ASSERT_EQ(us.size(), 4u);
  EXPECT_NEAR(us[0], 2 + 1.6 * 10 + 10, 1e-6);  // its own fit, 10,000 bytes recorded
  EXPECT_NEAR(us[1], 2 + 1.6 * 10 + 10, 1e-6);  // not timed: one list and a number
  EXPECT_NEAR(us[2], 3 + 0.5 * 10 + 20, 1e-6);  // not timed, two lists: the List fit
  EXPECT_NEAR(us[3], 3 + 0.5 * 10 + 20, 1e-6);
  hw.foreach_ops[1].op = "aten::mul_";
  expectRefusedNaming(hw, "foreach");
}

TEST(OpModel, ALookupFollowsTheLeastSquaresLineThroughEveryPoolingOfItsTable) {
  HwProfile hw = handProfile();
  // One table at three poolings, not on one line: (256, 10), (2048, 30),
  // (8192, 100) lookups -> us.
  const double n[3] = {256, 2048, 8192}, us[3] = {10, 30, 100};
  const int64_t pooling[3] = {1, 8, 32};
  for (int i = 0; i < 3; ++i) {
    hw.embedding.push_back({1000, 16, 256, pooling[i], "uniform", us[i], 50, 0});
  }
  // The line by the normal equations, worked here apart from the model.
  double sx = 0, sxx = 0, sy = 0, sxy = 0;
  for (int i = 0; i < 3; ++i) {
    sx += n[i];
    sxx += n[i] * n[i];
    sy += us[i];
    sxy += n[i] * us[i];
  }
  const double slope = (3 * sxy - sx * sy) / (3 * sxx - sx * sx), fixed = (sy - slope * sx) / 3;
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto w = b.tensor({1000, 16}), idx = b.tensor({4000}, DType::kInt64);
  const auto off = b.tensor({100}, DType::kInt64), out = b.tensor({100, 16});
  b.op("aten::embedding_bag(Tensor weight, Tensor indices, Tensor offsets, ...) -> (Tensor, Tensor, Tensor, Tensor)",
       {w, idx, off}, {out});
  const trace::Trace t = b.finish();
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, fixed + slope * 4000, 1e-6);
}

TEST(HwProfile, CurvesAreSortedOnceWhenAProfileIsRead) {
  HwProfile hw = handProfile();
  hw.bandwidth["unary"] = {{16000, 8}, {1000, 2}, {4000, 4}};  // as a hand edit may leave it
  hw.cold_after = {{1000, 6}, {100, 2}};
  const HwProfile back = profileFromJson(profileToJson(hw), "hand.json");
  EXPECT_NEAR(curveUs(back.bandwidth.at("unary"), 2000), 2 * std::sqrt(2.0), 1e-9);
  EXPECT_DOUBLE_EQ(curveUs(back.bandwidth.at("unary"), 32000), 16);
  EXPECT_DOUBLE_EQ(coldAfterUs(back.cold_after, 50), 1);  // written, read back, sorted
}

// The code's cold curve by kinds in between: written, read back and sorted;
// 0 for the same kind back to back, in proportion below the first point,
// log-linear between, flat beyond; a point of no kinds or a negative extra
// refused naming the section and the file.
TEST(HwProfile, TheColdKindsCurveRoundTripsInterpolatesAndRefusesBadPoints) {
  HwProfile hw = handProfile();
  hw.cold_kinds = {{16, 9}, {1, 1}, {4, 1}};
  const HwProfile back = profileFromJson(profileToJson(hw), "hand.json");
  ASSERT_EQ(back.cold_kinds.size(), 3u);
  EXPECT_DOUBLE_EQ(coldKindsUs(back.cold_kinds, 0), 0);
  EXPECT_DOUBLE_EQ(coldKindsUs(back.cold_kinds, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(coldKindsUs(back.cold_kinds, 4), 1);
  EXPECT_NEAR(coldKindsUs(back.cold_kinds, 8), 5, 1e-12);  // halfway in log between 4 and 16
  EXPECT_DOUBLE_EQ(coldKindsUs(back.cold_kinds, 100), 9);
  EXPECT_TRUE(profileFromJson(profileToJson(handProfile()), "old.json").cold_kinds.empty());
  hw.cold_kinds = {{0, 1}};
  expectRefusedNaming(hw, "cold_kinds");
  hw.cold_kinds = {{4, -1}};
  expectRefusedNaming(hw, "cold_kinds");
}

// A GPU profile's launch table, scale and sync latency are written and read
// back; a launch table that is not of non-negative numbers is refused
// naming the file.
TEST(HwProfile, AGpuProfilesLaunchTableRoundTripsAndAMalformedOneIsRefused) {
  HwProfile hw = handProfile();
  hw.identity.device = "cuda";
  hw.launch_us = {{"aten::mm", 7.5}, {"aten::convolution_backward:input", 21}};
  hw.launch_scale = 1.25;
  hw.launch_first_scale = 1.75;
  hw.call_cold_us = 0.5;
  hw.sync_latency_us = 6;
  hw.synchronising_ops = {"aten::_embedding_bag_backward"};
  hw.identity.device_model = "NVIDIA H100 80GB HBM3";
  const HwProfile back = profileFromJson(profileToJson(hw), "gpu.json");
  EXPECT_EQ(back.identity.device_model, hw.identity.device_model);
  EXPECT_EQ(back.synchronising_ops, hw.synchronising_ops);
  EXPECT_EQ(back.launch_us, hw.launch_us);
  EXPECT_DOUBLE_EQ(back.launch_scale, 1.25);
  EXPECT_DOUBLE_EQ(back.launch_first_scale, 1.75);
  EXPECT_DOUBLE_EQ(back.call_cold_us, 0.5);
  EXPECT_DOUBLE_EQ(back.sync_latency_us, 6);
  EXPECT_TRUE(profileFromJson(profileToJson(handProfile()), "cpu.json").launch_us.empty());
  hw.launch_us["aten::mm"] = -1;
  expectRefusedNaming(hw, "launch_us.aten::mm");
}

// A CPU profile's call costs (a view's cold call, a mixed-type input's
// cast, the GEMM ops' calls beyond their product) are written and read
// back; absent in older profiles they read as "none" (-1, 0, empty); a
// negative one is refused naming the file and the field.
TEST(HwProfile, TheCallCostsRoundTripAndANegativeOneIsRefused) {
  HwProfile hw = handProfile();
  hw.call_cold_view_us = 0.25;
  hw.cast_input_us = 1.75;
  hw.call_extra_us = {{"aten::addmm", 2.5}, {"aten::linear:nobias", 1}};
  hw.call_us = {{"aten::t", 0.5}, {"aten::item", 0.25}};
  const HwProfile back = profileFromJson(profileToJson(hw), "cpu.json");
  EXPECT_EQ(back.call_us, hw.call_us);
  EXPECT_DOUBLE_EQ(back.call_cold_view_us, 0.25);
  EXPECT_DOUBLE_EQ(back.cast_input_us, 1.75);
  EXPECT_EQ(back.call_extra_us, hw.call_extra_us);
  const HwProfile old = profileFromJson(profileToJson(handProfile()), "old.json");
  EXPECT_TRUE(old.call_extra_us.empty());
  EXPECT_TRUE(old.call_us.empty());
  EXPECT_DOUBLE_EQ(old.call_cold_view_us, -1);
  EXPECT_DOUBLE_EQ(old.cast_input_us, 0);
  for (const char* field : {"call_cold_view_us", "cast_input_us"}) {
    nlohmann::json j = nlohmann::json::parse(profileToJson(hw));
    j[field] = -0.5;
    try {
      profileFromJson(j.dump(), "bad.json");
      ADD_FAILURE() << "a negative " << field << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  hw.call_us["aten::t"] = -1;
  expectRefusedNaming(hw, "call_us.aten::t");
  hw.call_us["aten::t"] = 0.5;
  hw.call_extra_us["aten::addmm"] = -1;
  expectRefusedNaming(hw, "call_extra_us.aten::addmm");
}

// The batch norm plane table is written and read back in plane order; a
// plane time of 0 is refused naming the file and the table.
TEST(HwProfile, TheBatchNormPlaneTableRoundTripsAndABadTimeIsRefused) {
  HwProfile hw = handProfile();
  hw.batchnorm_backward_planes.vector_floats = 16;
  hw.batchnorm_backward_planes.per_plane = {{4, 0.147}, {1, 0.04}, {16, 0.051}};
  const HwProfile back = profileFromJson(profileToJson(hw), "cpu.json");
  EXPECT_EQ(back.batchnorm_backward_planes.vector_floats, 16);
  ASSERT_EQ(back.batchnorm_backward_planes.per_plane.size(), 3u);
  EXPECT_DOUBLE_EQ(back.batchnorm_backward_planes.per_plane[0].bytes, 1);
  EXPECT_DOUBLE_EQ(back.batchnorm_backward_planes.per_plane[1].us, 0.147);
  EXPECT_TRUE(profileFromJson(profileToJson(handProfile()), "cpu.json")
                  .batchnorm_backward_planes.per_plane.empty());
  hw.batchnorm_backward_planes.per_plane[0].us = 0;
  expectRefusedNaming(hw, "batchnorm_backward_planes");
}

// The batch norm forward points are written and read back field by field;
// a time of 0 is refused naming the table.
TEST(HwProfile, TheBatchNormForwardPointsRoundTripAndABadTimeIsRefused) {
  HwProfile hw = handProfile();
  hw.batchnorm_forward = {{2, 512, 4, 25.5}, {32, 512, 1, 18.8}};
  const HwProfile back = profileFromJson(profileToJson(hw), "cpu.json");
  ASSERT_EQ(back.batchnorm_forward.size(), 2u);
  EXPECT_DOUBLE_EQ(back.batchnorm_forward[1].n, 32);
  EXPECT_DOUBLE_EQ(back.batchnorm_forward[0].c, 512);
  EXPECT_DOUBLE_EQ(back.batchnorm_forward[0].plane, 4);
  EXPECT_DOUBLE_EQ(back.batchnorm_forward[1].us, 18.8);
  EXPECT_TRUE(profileFromJson(profileToJson(handProfile()), "cpu.json").batchnorm_forward.empty());
  hw.batchnorm_forward[1].us = 0;
  expectRefusedNaming(hw, "batchnorm_forward");
}

// A figure's rounds come back as written, a round is the median of the
// values so far (4, 1, 3 -> 4, 2.5, 3: the median's own closed form), and a
// round that is not a number is refused by name. Planted faults: the rounds
// left out of the JSON, addRound keeping the last value or the mean (8/3 at
// the third), a string accepted as a round.
TEST(HwProfile, TheRoundsOfEachFigureRoundTripAndTheMedianIsKept) {
  HwProfile hw = handProfile();
  EXPECT_DOUBLE_EQ(detail::addRound(hw, "replay_step_us", 4.0), 4.0);
  EXPECT_DOUBLE_EQ(detail::addRound(hw, "replay_step_us", 1.0), 2.5);
  EXPECT_DOUBLE_EQ(detail::addRound(hw, "replay_step_us", 3.0), 3.0);
  detail::addRound(hw, "cold_after:3000", -0.5);
  const HwProfile back = profileFromJson(profileToJson(hw), "cpu.json");
  ASSERT_EQ(back.rounds.size(), 2u);
  EXPECT_EQ(back.rounds.at("replay_step_us"), (std::vector<double>{4.0, 1.0, 3.0}));
  EXPECT_EQ(back.rounds.at("cold_after:3000"), (std::vector<double>{-0.5}));
  EXPECT_TRUE(profileFromJson(profileToJson(handProfile()), "cpu.json").rounds.empty());
  nlohmann::json j = nlohmann::json::parse(profileToJson(hw));
  j["rounds"]["dispatch_us"] = {0.6, "fast"};
  try {
    profileFromJson(j.dump(), "bad.json");
    ADD_FAILURE() << "a round that is not a number was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rounds.dispatch_us"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
  }
}

// A later pass's faster time replaces a point's, field by field, and a
// slower one leaves it; memory curves are not passes of this kind. Planted
// faults: the slower time kept, one of the conv halves or the BMMs left
// out, a pass of another length read past its end.
TEST(HwProfile, AnotherPassKeepsEachComputePointsFasterTime) {
  HwProfile kept, again;
  kept.gemm = {{1, 64, 64, 64, 10.0}, {1, 128, 128, 128, 20.0}};
  again.gemm = {{1, 64, 64, 64, 7.0}, {1, 128, 128, 128, 25.0}, {1, 256, 256, 256, 1.0}};
  kept.bmm = {{4, 16, 16, 16, 5.0}};
  again.bmm = {{4, 16, 16, 16, 3.0}};
  kept.conv = {ConvPoint{8, 3, 32, 32, 16, 3, 3, 1, 1, 100, 200, 300, 50, 60, 70}};
  again.conv = {ConvPoint{8, 3, 32, 32, 16, 3, 3, 1, 1, 150, 120, 290, 40, 65, 70}};
  kept.bandwidth["unary"] = {{1024, 2.0}};
  again.bandwidth["unary"] = {{1024, 1.0}};
  detail::keepFaster(kept, again);
  ASSERT_EQ(kept.gemm.size(), 2u);
  EXPECT_EQ(kept.gemm[0].us, 7.0);
  EXPECT_EQ(kept.gemm[1].us, 20.0);
  EXPECT_EQ(kept.bmm[0].us, 3.0);
  EXPECT_EQ(kept.conv[0].fwd_us, 100);
  EXPECT_EQ(kept.conv[0].bwd_input_us, 120);
  EXPECT_EQ(kept.conv[0].bwd_weight_us, 290);
  EXPECT_EQ(kept.conv[0].fwd_cl_us, 40);
  EXPECT_EQ(kept.conv[0].bwd_input_cl_us, 60);
  EXPECT_EQ(kept.bandwidth["unary"][0].us, 2.0);
}

// One aten::conv2d of `x` by `w` into `y` (3x3, padding 1) with `stride`
// and `groups`: node 2 of the trace.
trace::Trace conv2dTrace(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                         const std::vector<int64_t>& y, int64_t stride, int64_t groups,
                         DType dtype = DType::kFloat) {
  TraceBuilder b;
  const auto xt = b.tensor(x, dtype), wt = b.tensor(w, dtype), yt = b.tensor(y, dtype);
  const auto ints = [&](int64_t v) {
    trace::Value l;
    l.kind = trace::ValueKind::kList;
    l.items = {trace::makeInt(b.trace(), v), trace::makeInt(b.trace(), v)};
    return l;
  };
  b.op("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
       "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
       {xt, wt, trace::makeNone(b.trace()), ints(stride), ints(1), ints(1), trace::makeInt(b.trace(), groups)},
       {yt});
  return b.finish();
}

TEST(OpModel, AStridedConvolutionReadsTheStridedMeasurement) {
  HwProfile hw = handProfile();
  // Same implicit GEMM (2 x 16 x 16 output pixels, 16 x 72) two ways: a
  // dense 16x16 map and a stride-2 32x32 one, measured at 100 and 300 us.
  hw.conv = {{2, 8, 16, 16, 16, 3, 3, 1, 1, 100.0, 100.0, 100.0},
             {2, 8, 32, 32, 16, 3, 3, 2, 1, 300.0, 300.0, 300.0}};
  const OpModel model(hw, "uniform");
  const trace::Trace t = conv2dTrace({2, 8, 32, 32}, {16, 8, 3, 3}, {2, 16, 16, 16}, 2, 1);
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 300.0, 1e-6);
}

// A grouped convolution reads the grouped measurement, not a dense one
// with the same implicit GEMM: the query (2 x 256 x 8 x 8 -> 256, 3x3, 8
// groups: k = 32 x 9 = 288) has every feature but the groups of a dense
// point (2 x 32 x 8 x 8 -> 256, k 288, 100 us) and one feature from a
// grouped point at batch 1 (8 groups, 25 us for half the FLOPs). The
// neighbours weigh 1 / distance^2 in log2 features (grouped 1, dense 1/9),
// over log rates: 50^0.9 x 100^0.1 = 53.6 us. Catches the groups left out
// of the features (the dense point matches exactly: 100 us).
TEST(OpModel, AGroupedConvolutionReadsTheGroupedMeasurement) {
  HwProfile hw = handProfile();
  hw.conv = {{2, 32, 8, 8, 256, 3, 3, 1, 1, 100.0, 100.0, 100.0},
             {1, 256, 8, 8, 256, 3, 3, 1, 8, 25.0, 25.0, 25.0}};
  const OpModel model(hw, "uniform");
  const trace::Trace t = conv2dTrace({2, 256, 8, 8}, {256, 32, 3, 3}, {2, 256, 8, 8}, 1, 8);
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, std::pow(50.0, 0.9) * std::pow(100.0, 0.1), 1e-6);
}

// A grouped convolution of several channels a group has a floor of its own
// kernel path, not the depthwise one's: a depthwise point of 9,216 FLOPs
// took 60 us, a grouped one of 36,864 (4 groups of 2 channels, 8 x 8) 30.
// Expected: a grouped layer of 576 FLOPs (4 groups of 2 channels on a 1 x 1
// map) costs the grouped point's 30 us, a depthwise one of 576 the
// depthwise point's 60 (both rates read under either). Catches grouped and
// depthwise layers in one class (60 for both).
TEST(OpModel, AGroupedConvFloorsAtTheGroupedPointsNotTheDepthwiseOnes) {
  HwProfile hw = handProfile();
  hw.conv = {{2, 64, 2, 2, 64, 3, 3, 1, 64, 60.0, 60.0, 60.0},
             {2, 8, 8, 8, 8, 3, 3, 1, 4, 30.0, 30.0, 30.0}};
  const OpModel model(hw, "uniform");
  const trace::Trace grouped = conv2dTrace({2, 8, 1, 1}, {8, 2, 3, 3}, {2, 8, 1, 1}, 1, 4);
  EXPECT_NEAR(model.estimate(grouped, grouped.nodes[2]).us, 30.0, 1e-9);
  const trace::Trace depthwise = conv2dTrace({2, 16, 1, 1}, {16, 1, 3, 3}, {2, 16, 1, 1}, 1, 16);
  EXPECT_NEAR(model.estimate(depthwise, depthwise.nodes[2]).us, 60.0, 1e-9);
}

// A channels-last input (or weight) reads the channels-last times of the
// profile's points, the family saying so; a profile that measured none
// reads the contiguous ones. The shape is the point's own (100 / 40 us
// forward). Catches the layout ignored (100), the weight's bit not looked
// at, and an empty channels-last set read (no rate: a NaN or the floor).
TEST(OpModel, AChannelsLastConvReadsTheChannelsLastMeasurement) {
  HwProfile hw = handProfile();
  hw.conv[0].fwd_cl_us = 40.0;
  hw.conv[0].bwd_input_cl_us = 50.0;
  hw.conv[0].bwd_weight_cl_us = 900.0;
  const OpModel model(hw, "uniform");
  const trace::Trace t = conv2dTrace({2, 8, 16, 16}, {16, 8, 3, 3}, {2, 16, 16, 16}, 1, 1);
  const OpEstimate plain = model.estimate(t, t.nodes[2], 0, 0, 0);
  EXPECT_NEAR(plain.us, 100.0, 1e-6);
  EXPECT_EQ(plain.family, "conv");
  for (const uint32_t bits : {1u << 0, 1u << 1}) {
    const OpEstimate nhwc = model.estimate(t, t.nodes[2], 0, 0, bits);
    EXPECT_NEAR(nhwc.us, 40.0, 1e-6) << bits;
    EXPECT_EQ(nhwc.family, "conv:channels_last");
  }
  const HwProfile without = handProfile();
  const OpModel old(without, "uniform");
  const OpEstimate e = old.estimate(t, t.nodes[2], 0, 0, 1u);
  EXPECT_NEAR(e.us, 100.0, 1e-6);
  EXPECT_EQ(e.family, "conv");
}

// A bfloat16 convolution reads the bfloat16 point of its shape (its
// channels-last time where measured, else its contiguous one); a float32
// one the float32 point, which the bfloat16 point must not move. A profile
// without bfloat16 points costs it at float32's. Catches the types mixed in
// one table, the type not read, and a missing channels-last set in the
// bfloat16 points falling back to float32's channels-last (40).
TEST(OpModel, ABfloat16ConvReadsTheBfloat16Measurement) {
  HwProfile hw = handProfile();
  hw.conv[0].fwd_cl_us = 40.0;
  hw.conv[0].bwd_input_cl_us = 50.0;
  hw.conv[0].bwd_weight_cl_us = 900.0;
  hw.conv.push_back(handProfile().conv[0]);
  hw.conv[1].fwd_us = 250.0;
  hw.conv[1].dtype = "bfloat16";
  const OpModel model(hw, "uniform");
  const trace::Trace f32 = conv2dTrace({2, 8, 16, 16}, {16, 8, 3, 3}, {2, 16, 16, 16}, 1, 1);
  const trace::Trace bf16 = conv2dTrace({2, 8, 16, 16}, {16, 8, 3, 3}, {2, 16, 16, 16}, 1, 1, DType::kBFloat16);
  EXPECT_NEAR(model.estimate(f32, f32.nodes[2]).us, 100.0, 1e-6);
  const OpEstimate e = model.estimate(bf16, bf16.nodes[2]);
  EXPECT_NEAR(e.us, 250.0, 1e-6);
  EXPECT_EQ(e.family, "conv:bfloat16");
  const OpEstimate cl = model.estimate(bf16, bf16.nodes[2], 0, 0, 1u);
  EXPECT_NEAR(cl.us, 250.0, 1e-6);
  EXPECT_EQ(cl.family, "conv:bfloat16");
  const HwProfile plain = handProfile();
  const OpModel old(plain, "uniform");
  const OpEstimate o = old.estimate(bf16, bf16.nodes[2]);
  EXPECT_NEAR(o.us, 100.0, 1e-6);
  EXPECT_EQ(o.family, "conv");
  const HwProfile back = profileFromJson(profileToJson(hw), "hw.json");
  ASSERT_EQ(back.conv.size(), 2u);
  EXPECT_EQ(back.conv[0].dtype, "float32");
  EXPECT_EQ(back.conv[1].dtype, "bfloat16");
}

// The channels-last times are written only where measured and read back;
// a point without them reads 0 (contiguous only).
TEST(HwProfile, ChannelsLastConvTimesRoundTripWhereMeasured) {
  HwProfile hw = handProfile();
  hw.conv.push_back(hw.conv[0]);
  hw.conv[1].fwd_cl_us = 40.0;
  hw.conv[1].bwd_input_cl_us = 50.0;
  hw.conv[1].bwd_weight_cl_us = 900.0;
  const std::string text = profileToJson(hw);
  const HwProfile back = profileFromJson(text, "hw.json");
  ASSERT_EQ(back.conv.size(), 2u);
  EXPECT_FALSE(back.conv[0].hasChannelsLast());
  EXPECT_EQ(back.conv[1].fwd_cl_us, 40.0);
  EXPECT_EQ(back.conv[1].bwd_input_cl_us, 50.0);
  EXPECT_EQ(back.conv[1].bwd_weight_cl_us, 900.0);
}

// A conv with fewer FLOPs than the profile's smallest costs at least what
// that one did: its fixed cost. Two points, 2 x 8 x 1 x 1 -> 16 (1x1: 512
// FLOPs, 7 us; a rate of 73 FLOP/us) and 2 x 8 x 16 x 16 -> 16 (3x3: 590k
// FLOPs, 100 us); a 1x1 conv of 2 x 8 x 1 x 1 -> 1 (padded to 3 x 3: 288
// FLOPs) reads a rate near the small point's, so the rate alone says about
// 4 us. Catches the floor left out (< 7), and one applied above the
// smallest point (the 3x3 shape at 2 x 8 x 8 x 8, 147k FLOPs, stays under
// 100 us by its rate).
TEST(OpModel, AConvSmallerThanAnyMeasuredCostsTheSmallestOnesCall) {
  HwProfile hw = handProfile();
  hw.conv = {{2, 8, 1, 1, 16, 1, 1, 1, 1, 7.0, 9.0, 8.0},
             {2, 8, 16, 16, 16, 3, 3, 1, 1, 100.0, 100.0, 100.0}};
  const OpModel model(hw, "uniform");
  const trace::Trace tiny = conv2dTrace({2, 8, 1, 1}, {1, 8, 1, 1}, {2, 1, 3, 3}, 1, 1);
  EXPECT_NEAR(model.estimate(tiny, tiny.nodes[2]).us, 7.0, 1e-9);
  // A 1x1 between the two: above the 1x1 class's least, on the rate.
  const trace::Trace mid = conv2dTrace({2, 8, 8, 8}, {16, 8, 1, 1}, {2, 16, 8, 8}, 1, 1);
  const double mid_us = model.estimate(mid, mid.nodes[2]).us;
  EXPECT_GT(mid_us, 7.0);
  EXPECT_LT(mid_us, 100.0);
}

// A conv whose inputs come from DRAM pays the unary kernel's cold extra
// for their bytes in the proportion that streaming them takes of its call:
// inputs 2 x 8 x 16 x 16 + 16 x 8 x 3 x 3 floats (20992 bytes, 41984 on
// the unary curves, beyond their last point: warm 8 x B / 16000, cold 28 x
// B / 16000, no gap at the first point); the conv's measured 100 us. The
// extra is (cold - warm) x warm / 100. Catches the extra left out (100),
// taken whole (152.5), or read at the inputs' bytes once (5.2 x 0.1).
TEST(OpModel, AConvsInputsFromDramCostTheStreamsExtraInProportion) {
  HwProfile hw = handProfile();
  hw.bandwidth["unary@cold"] = {{1000, 2}, {4000, 10}, {16000, 28}};
  const OpModel model(hw, "uniform");
  const trace::Trace t = conv2dTrace({2, 8, 16, 16}, {16, 8, 3, 3}, {2, 16, 16, 16}, 1, 1);
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 100.0, 1e-9);
  const double bytes = 2 * 20992.0, warm = 8 * bytes / 16000, cold = 28 * bytes / 16000;
  EXPECT_NEAR(model.estimate(t, t.nodes[2], 1.0).us, 100.0 + (cold - warm) * warm / 100.0, 1e-9);
}

// The floor is per kernel path: a dense 3x3 with fewer FLOPs than the
// least measured 3x3 costs that one's call (oneDNN's fixed cost), not the
// 1x1's on a 1 x 1 map; a grouped conv below the least grouped one costs
// that one's. Catches a single global floor (7 us for both), or the floor
// read from the wrong class.
TEST(OpModel, TheConvFloorIsTheLeastMeasuredOfItsKernelPath) {
  HwProfile hw = handProfile();
  hw.conv = {{2, 8, 1, 1, 16, 1, 1, 1, 1, 7.0, 9.0, 8.0},
             {2, 8, 16, 16, 16, 3, 3, 1, 1, 40.0, 45.0, 50.0},
             {2, 32, 8, 8, 32, 3, 3, 1, 32, 30.0, 28.0, 60.0},
             {8, 64, 32, 32, 64, 3, 3, 1, 1, 4000.0, 4000.0, 4000.0}};
  const OpModel model(hw, "uniform");
  const trace::Trace dense = conv2dTrace({2, 8, 8, 8}, {16, 8, 3, 3}, {2, 16, 8, 8}, 1, 1);
  EXPECT_NEAR(model.estimate(dense, dense.nodes[2]).us, 40.0, 1e-9);
  const trace::Trace grouped = conv2dTrace({2, 16, 4, 4}, {16, 1, 3, 3}, {2, 16, 4, 4}, 1, 16);
  EXPECT_NEAR(model.estimate(grouped, grouped.nodes[2]).us, 30.0, 1e-9);
}

// Nor does a conv below its own path's least cost the overall least when
// that is another path's: a squeeze-excite 1x1 on a 1 x 1 map (32 FLOPs)
// under a tiny depthwise point (144 FLOPs, a 60 us call) and the 1x1 class's
// least (512 FLOPs, 7 us). Expected: the 1x1's 7 us. Catches the overall
// least taken whatever the class (60). A dense 3x3, a path the profile has
// no point of, still costs the overall least (60).
TEST(OpModel, AConvBelowItsPathsLeastCostsThatNotAnotherPathsCall) {
  HwProfile hw = handProfile();
  hw.conv = {{2, 8, 1, 1, 16, 1, 1, 1, 1, 7.0, 9.0, 8.0},
             {2, 4, 1, 1, 4, 3, 3, 1, 4, 60.0, 70.0, 80.0}};
  const OpModel model(hw, "uniform");
  const trace::Trace se = conv2dTrace({2, 4, 1, 1}, {2, 4, 1, 1}, {2, 2, 1, 1}, 1, 1);
  EXPECT_NEAR(model.estimate(se, se.nodes[2]).us, 7.0, 1e-9);
  const trace::Trace dense = conv2dTrace({2, 1, 1, 1}, {1, 1, 3, 3}, {2, 1, 1, 1}, 1, 1);
  EXPECT_NEAR(model.estimate(dense, dense.nodes[2]).us, 60.0, 1e-9);
}

// Nor does a conv cost less than the fastest of its kernel path with as
// many FLOPs or more: depthwise 3x3s of 74 kFLOP and 9.4 MFLOP both took
// about 30-40 us (a call's fixed cost), and one of 442 kFLOP between them
// read a rate from its neighbours that put it under either. Expected: the
// larger point's 40 us (the rate alone reads 31.7 here). Catches
// the floor left out, or taken from points with fewer FLOPs (30) or from
// another class (the dense point's 4000).
TEST(OpModel, AConvCostsAtLeastTheFastestOfItsPathWithAsManyFlops) {
  HwProfile hw = handProfile();
  hw.conv = {{2, 32, 8, 8, 32, 3, 3, 1, 32, 30.0, 28.0, 29.0},
             {8, 64, 32, 32, 64, 3, 3, 1, 64, 40.0, 45.0, 50.0},
             {8, 64, 32, 32, 64, 3, 3, 1, 1, 4000.0, 4000.0, 4000.0}};
  const OpModel model(hw, "uniform");
  const trace::Trace mid = conv2dTrace({2, 48, 16, 16}, {48, 1, 3, 3}, {2, 48, 16, 16}, 1, 48);
  EXPECT_NEAR(model.estimate(mid, mid.nodes[2]).us, 40.0, 1e-9);
}

// A float32 1x1, stride-1 convolution of fewer than 16 samples on one
// thread runs libtorch's native path, a GEMM per sample, and costs at least
// those GEMMs at the profile's ratio of such calls to their GEMMs. The GEMM
// grid follows a closed form whose rate falls with n (the pixels: 1/9 of
// its peak at one); the profile's three native points take 1.5x their GEMMs
// (forward: out x pixels x in per sample; input gradient: in x pixels x out
// per sample; weight gradient: one out x in x (samples x pixels)).
// Expected: 1.5x the closed form for a 1024 -> 2048 layer on 4 x 1 x 1
// maps (a batch none of the points has), which the points' rates (16
// pixels each) put at well under half of that. Catches
// the bound left out, the samples not multiplied, m and n swapped (the rate
// is n's), the ratio left out, and the path assumed on two threads or for
// a stride-2 layer (oneDNN's: the grid's rate).
TEST(OpModel, ANativePath1x1ConvCostsAtLeastItsPerSampleGemms) {
  const auto gemm = [](double m, double n, double k) { return 2 * m * n * k / (2000.0 * n / (n + 8)); };
  HwProfile hw = handProfile();
  hw.gemm.clear();
  std::set<std::array<int64_t, 3>> shapes;
  struct Native { int64_t n, c, hw, oc; };
  const std::vector<Native> points = {{2, 64, 4, 128}, {2, 128, 4, 64}, {4, 64, 4, 64}};
  for (const Native& p : points) {
    const int64_t pixels = p.hw * p.hw;
    shapes.insert({p.oc, pixels, p.c});
    shapes.insert({p.c, pixels, p.oc});
    shapes.insert({p.oc, p.c, p.n * pixels});
    const double n = static_cast<double>(p.n), px = static_cast<double>(pixels);
    const double c = static_cast<double>(p.c), oc = static_cast<double>(p.oc);
    hw.conv.push_back({p.n, p.c, p.hw, p.hw, p.oc, 1, 1, 1, 1, 1.5 * n * gemm(oc, px, c),
                       1.5 * n * gemm(c, px, oc), 1.5 * gemm(oc, c, n * px)});
  }
  for (const auto& g : std::vector<std::array<int64_t, 3>>{{2048, 1, 1024}, {1024, 1, 2048}, {2048, 1024, 4}}) {
    shapes.insert(g);
  }
  for (const auto& [m, n, k] : shapes) {
    hw.gemm.push_back({1, m, n, k, gemm(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k))});
  }
  const OpModel model(hw, "uniform");
  const trace::Trace t = conv2dTrace({4, 1024, 1, 1}, {2048, 1024, 1, 1}, {4, 2048, 1, 1}, 1, 1);
  const OpEstimate fwd = model.estimate(t, t.nodes[2]);
  EXPECT_NEAR(fwd.us, 1.5 * 4 * gemm(2048, 1, 1024), 1e-6);
  EXPECT_EQ(fwd.family, "conv:gemm");
  // Its backward asking for both gradients.
  TraceBuilder b;
  const auto gy = b.tensor({4, 2048, 1, 1}), x = b.tensor({4, 1024, 1, 1}), w = b.tensor({2048, 1024, 1, 1});
  trace::Value mask;
  mask.kind = trace::ValueKind::kList;
  mask.items = {trace::makeBool(b.trace(), true), trace::makeBool(b.trace(), true),
                trace::makeBool(b.trace(), false)};
  std::vector<trace::Value> in = {gy, x, w};
  while (in.size() < 10) in.push_back(trace::makeNone(b.trace()));
  in.push_back(mask);
  const auto gx = b.tensor({4, 1024, 1, 1}), gw = b.tensor({2048, 1024, 1, 1});
  b.op("aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, ...)", in, {gx, gw});
  const trace::Trace bt = b.finish();
  EXPECT_NEAR(model.estimate(bt, bt.nodes[2]).us, 1.5 * (4 * gemm(1024, 1, 2048) + gemm(2048, 1024, 4)), 1e-6);
  // A profile point itself reads its own time: the bound is at the ratio
  // its points share.
  const trace::Trace own = conv2dTrace({2, 64, 4, 4}, {128, 64, 1, 1}, {2, 128, 4, 4}, 1, 1);
  EXPECT_NEAR(model.estimate(own, own.nodes[2]).us, hw.conv[1].fwd_us, 1e-6);
  // On two threads libtorch takes oneDNN for it, and the grid prices it.
  HwProfile two = hw;
  two.identity.threads = 2;
  const OpModel threaded(two, "uniform");
  const OpEstimate grid = threaded.estimate(t, t.nodes[2]);
  EXPECT_EQ(grid.family, "conv");
  EXPECT_LT(grid.us, 0.5 * fwd.us);
  // So does a strided 1x1.
  const trace::Trace strided = conv2dTrace({4, 1024, 2, 2}, {2048, 1024, 1, 1}, {4, 2048, 1, 1}, 2, 1);
  EXPECT_EQ(model.estimate(strided, strided.nodes[2]).family, "conv");
}

// A transposed convolution as ConvTranspose2d records it: node 2 the
// aten::convolution (transposed set) of x by w into y, node 3 its
// convolution_backward asking for grad_input and grad_weight.
trace::Trace transposedConvTrace(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                 const std::vector<int64_t>& y, int64_t stride, int64_t pad,
                                 int64_t groups) {
  TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto xt = b.tensor(x), wt = b.tensor(w), yt = b.tensor(y);
  const auto ints = [&](int64_t v) {
    trace::Value l;
    l.kind = trace::ValueKind::kList;
    l.items = {trace::makeInt(t, v), trace::makeInt(t, v)};
    return l;
  };
  const auto args = [&](std::vector<trace::Value> in) {
    for (trace::Value v : {trace::makeNone(t), ints(stride), ints(pad), ints(1), trace::makeBool(t, true),
                           ints(0), trace::makeInt(t, groups)}) {
      in.push_back(v);
    }
    return in;
  };
  b.op("aten::convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
       "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor",
       args({xt, wt}), {yt});
  trace::Value mask;
  mask.kind = trace::ValueKind::kList;
  mask.items = {trace::makeBool(t, true), trace::makeBool(t, true), trace::makeBool(t, false)};
  std::vector<trace::Value> in = args({yt, xt, wt});
  in.push_back(mask);
  b.op("aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? "
       "bias_sizes, int[] stride, SymInt[] padding, int[] dilation, bool transposed, SymInt[] "
       "output_padding, int groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
       in, {b.tensor(x), b.tensor(w), trace::makeNone(t)});
  return b.finish();
}

// A transposed convolution of 2 x 16 x 8 x 8 by a [16, 4, 3, 3] weight in
// 2 groups, stride 2: 8 output channels on 17 x 17 maps. Each of the 2 x
// 64 input pixels multiplies its 16 / 2 channels into 8 x 3 x 3 outputs:
// m = 128, n = 8, k = 8 x 9 (PyTorch's conv_transpose FLOP count), groups
// 2 from the argument. Its backward reads the same from (grad_out, input,
// weight). Catches the weight read as a forward one's (groups 16 / 4 = 4,
// n = 16), or m from the output's 2 x 289 pixels.
TEST(OpShapes, ATransposedConvolutionIsTheGemmOfTheConvWhoseInputGradientItIs) {
  const trace::Trace t = transposedConvTrace({2, 16, 8, 8}, {16, 4, 3, 3}, {2, 8, 17, 17}, 2, 0, 2);
  for (const bool backward : {false, true}) {
    const ConvShape c = convShapeOf(opShapes(t, t.nodes[backward ? 3 : 2]), backward);
    ASSERT_TRUE(c.valid);
    EXPECT_TRUE(c.transposed);
    EXPECT_DOUBLE_EQ(c.groups, 2);
    EXPECT_DOUBLE_EQ(c.m, 2 * 8 * 8);
    EXPECT_DOUBLE_EQ(c.n, 8);
    EXPECT_DOUBLE_EQ(c.k, 16 / 2 * 9);
    EXPECT_DOUBLE_EQ(c.flops(), 2.0 * (2 * 8 * 8) * 8 * (16 / 2 * 9));
  }
}

// A transposed convolution of a measured transposed point's shape costs
// that point's times (forward; grad_input + grad_weight), not the forward
// grid's rate for its FLOPs; a profile without transposed points keeps the
// forward grid. The point: 8 x 16 x 8 x 8 into 8 channels by 4x4, stride
// 2, 200 / 300 / 400 us; the forward point of the same FLOPs 1000 / 1000 /
// 1000. Catches the transposed points pooled with the forward ones (a rate
// between the two), or read by the output's pixels (FLOPs 4x the point's).
TEST(OpModel, ATransposedConvolutionReadsTheTransposedPoints) {
  HwProfile hw = handProfile();
  ConvPoint tp{8, 16, 8, 8, 8, 4, 4, 2, 1, 200.0, 300.0, 400.0};
  tp.transposed = true;
  hw.conv = {{8, 16, 8, 8, 8, 4, 4, 1, 1, 1000.0, 1000.0, 1000.0}, tp};
  const trace::Trace t = transposedConvTrace({8, 16, 8, 8}, {16, 8, 4, 4}, {8, 8, 14, 14}, 2, 2, 1);
  const OpModel model(hw, "uniform");
  const OpEstimate fwd = model.estimate(t, t.nodes[2]);
  EXPECT_EQ(fwd.family, "conv:transposed");
  EXPECT_NEAR(fwd.us, 200.0, 1e-9);
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 300.0 + 400.0, 1e-9);
  const HwProfile back = profileFromJson(profileToJson(hw), "hw.json");  // the flag round-trips
  ASSERT_EQ(back.conv.size(), 2u);
  EXPECT_FALSE(back.conv[0].transposed);
  EXPECT_TRUE(back.conv[1].transposed);
  hw.conv.pop_back();
  const OpModel forward_only(hw, "uniform");
  EXPECT_EQ(forward_only.estimate(t, t.nodes[2]).family, "conv");
}

TEST(OpModel, MemoryBoundOpsFollowTheirClassCurveAndViewsCostTheViewCall) {
  const HwProfile hw = handProfile();
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto a = b.tensor({500}), r = b.tensor({500});  // 2000 + 2000 bytes
  b.op("aten::relu(Tensor self) -> Tensor", {a}, {r});
  const auto v = b.tensor({10, 50}, DType::kFloat, 0);
  b.op("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", {a}, {v});
  const trace::Trace t = b.finish();
  const OpEstimate relu = model.estimate(t, t.nodes[2]);
  EXPECT_EQ(relu.family, "memory:unary");
  EXPECT_NEAR(relu.us, 4.0, 1e-9);
  EXPECT_EQ(model.estimate(t, t.nodes[3]).family, "view");
  EXPECT_DOUBLE_EQ(model.estimate(t, t.nodes[3]).us, 0.5);
}

// zero_ reads the fill curve over the bytes it writes, and its cold side
// for gradients zeroed an iteration after they were written: a [1000]
// float zero_ (4000 bytes) at 3 us warm; all inputs cold add the cold
// curve's rise over the warm one beyond the smallest size's gap: (23 - 3)
// - (11 - 1) = 10. A profile whose fill curve has no cold side keeps half
// the unary kernel over twice the bytes: 4 x sqrt(2) / 2. Catches the
// unary rule kept (2.83 warm), or the cold side left out (3 cold).
TEST(OpModel, ZeroFillReadsTheFillCurveWarmAndCold) {
  HwProfile hw = handProfile();
  hw.bandwidth["fill"] = {{1000, 1}, {4000, 3}, {16000, 9}};
  hw.bandwidth["fill@cold"] = {{1000, 11}, {4000, 23}, {16000, 59}};
  TraceBuilder b;
  const auto g = b.tensor({1000});
  b.op("aten::zero_(Tensor(a!) self) -> Tensor(a!)", {g}, {g});
  const trace::Trace t = b.finish();
  const OpModel model(hw, "uniform");
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:fill");
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 3.0, 1e-9);
  EXPECT_NEAR(model.estimate(t, t.nodes[2], 1.0).us, 13.0, 1e-9);
  hw.bandwidth.erase("fill@cold");
  const OpModel older(hw, "uniform");
  EXPECT_NEAR(older.estimate(t, t.nodes[2]).us, 4 * std::sqrt(2.0) / 2, 1e-9);
}

// Batch norm reads its own measured curve (per-channel statistics), not
// layer norm's; a profile without it falls back to the norm curve.
TEST(OpModel, BatchNormReadsItsOwnCurveWhenMeasured) {
  HwProfile hw = handProfile();
  hw.bandwidth["norm"] = {{1000, 1}, {8000, 2}};
  TraceBuilder b;
  const auto x = b.tensor({2, 4, 10, 10}), y = b.tensor({2, 4, 10, 10});  // 3200 + 3200 bytes
  const auto s1 = b.tensor({0}), s2 = b.tensor({0});
  b.op("aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
       "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
       {x}, {y, s1, s2});
  const trace::Trace t = b.finish();
  const OpEstimate norm = OpModel(hw, "uniform").estimate(t, t.nodes[2]);
  EXPECT_EQ(norm.family, "memory:norm");
  EXPECT_NEAR(norm.us, std::pow(6.4, 1.0 / 3), 1e-9);  // log-log: 1 us * 2^(log8 6.4)
  hw.bandwidth["batchnorm"] = {{3200, 10}, {6400, 20}};
  const OpEstimate bn = OpModel(hw, "uniform").estimate(t, t.nodes[2]);
  EXPECT_EQ(bn.family, "memory:batchnorm");
  EXPECT_NEAR(bn.us, 20.0, 1e-9);
}

// Batch norm's backward costs at least its planes at the table's time per
// plane of their size: exact up to the table's run of small sizes, then on
// the ladder of sizes the vector width divides or of those it does not.
// The bytes curve here says 1-2 us for every query. [2, 576, 2, 2]: 1152
// planes of 4 at 0.15 = 172.8 us. [2, 64, 7, 7] (49, ragged for 8 floats):
// log-log between 33 (0.12) and 65 (0.18) on the ragged rungs; the aligned
// rungs (32: 0.05, 64: 0.07) would give 0.07-ish. [8, 64, 8, 8] (64,
// divides): 512 x 0.07 = 35.84. Forward batch norm keeps its curve. Catches
// the floor left out (1-2 us), the ladders swapped or mixed, an inexact
// small lookup, and a floor on the forward.
TEST(OpModel, BatchNormBackwardCostsItsPlanesAtTheirSizesTime) {
  HwProfile hw = handProfile();
  hw.bandwidth["batchnorm"] = {{1000, 1}, {1e6, 2}};
  hw.bandwidth["batchnorm_backward"] = {{1000, 1}, {1e6, 2}};
  auto& table = hw.batchnorm_backward_planes;
  table.vector_floats = 8;
  for (int p = 1; p <= 32; ++p) table.per_plane.push_back({double(p), p % 8 == 0 ? 0.05 : 0.15});
  table.per_plane.insert(table.per_plane.end(), {{33, 0.12}, {64, 0.07}, {65, 0.18}});
  const OpModel model(hw, "uniform");
  const auto backward = [&](std::vector<int64_t> shape) {
    TraceBuilder b;
    const auto g = b.tensor(shape), x = b.tensor(shape), w = b.tensor({shape[1]});
    const auto gx = b.tensor(shape), gw = b.tensor({shape[1]}), gb = b.tensor({shape[1]});
    b.op("aten::native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
         "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, "
         "bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
         {g, x, w}, {gx, gw, gb});
    const trace::Trace t = b.finish();
    return model.estimate(t, t.nodes[2]).us;
  };
  EXPECT_NEAR(backward({2, 576, 2, 2}), 1152 * 0.15, 1e-9);
  const double f = std::log(49.0 / 33) / std::log(65.0 / 33);
  EXPECT_NEAR(backward({2, 64, 7, 7}), 128 * std::exp(std::log(0.12) + f * std::log(0.18 / 0.12)), 1e-9);
  EXPECT_NEAR(backward({8, 64, 8, 8}), 512 * 0.07, 1e-9);
  EXPECT_NEAR(backward({4, 16, 3}), 64 * 0.15, 1e-9);
  TraceBuilder b;
  const auto x = b.tensor({2, 576, 2, 2}), y = b.tensor({2, 576, 2, 2});
  const auto s1 = b.tensor({576}), s2 = b.tensor({576});
  b.op("aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
       "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
       {x}, {y, s1, s2});
  const trace::Trace t = b.finish();
  EXPECT_LT(model.estimate(t, t.nodes[2]).us, 3.0);
}

// A training forward costs at least the four parts fitted to the profile's
// points: here the points follow 5 us + 0.01 a channel + 0.02 a plane (of
// more than one element) + 0.001 an element exactly, so any least-squares
// fit gives the law back. [2, 576, 2, 2]: 5 + 5.76 + 23.04 + 4.608; a 1-D
// [32, 300] (planes of one): 5 + 3 + 9,600 x 0.001. The bytes curve says 1-2
// us. Inference mode and a channels-last input (other kernels) keep the
// curve, and so does a profile without the points. Catches the floor left
// out, the plane part charged to planes of one element, an unweighted or
// mis-solved fit (other parts), and the floor on another kernel.
TEST(OpModel, BatchNormForwardCostsItsFittedParts) {
  HwProfile hw = handProfile();
  hw.bandwidth["batchnorm"] = {{1000, 1}, {1e6, 2}};
  const auto law = [](double n, double c, double plane) {
    return 5 + 0.01 * c + (plane > 1 ? 0.02 * n * c : 0) + 0.001 * n * c * plane;
  };
  for (const auto& s : std::vector<std::array<double, 3>>{{2, 16, 1},   {2, 512, 1},  {32, 512, 1}, {2, 16, 16},
                                                          {2, 512, 4},  {16, 64, 4},  {2, 1024, 4}, {2, 64, 64},
                                                          {2, 256, 16}, {8, 16, 256}, {4, 32, 1024}}) {
    hw.batchnorm_forward.push_back({s[0], s[1], s[2], law(s[0], s[1], s[2])});
  }
  const OpModel model(hw, "uniform");
  const auto forward = [&](std::vector<int64_t> shape, bool training, uint32_t channels_last = 0,
                           const OpModel* with = nullptr) {
    TraceBuilder b;
    const auto x = b.tensor(shape), y = b.tensor(shape);
    const auto w = b.tensor({shape[1]}), rm = b.tensor({shape[1]}), rv = b.tensor({shape[1]});
    b.op("aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
         "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
         {x, w, w, rm, rv, trace::makeBool(b.trace(), training), trace::makeDouble(b.trace(), 0.1),
          trace::makeDouble(b.trace(), 1e-5), trace::makeBool(b.trace(), true)},
         {y});
    const trace::Trace t = b.finish();
    return (with ? *with : model).estimate(t, t.nodes[2], 0, 0, channels_last).us;
  };
  EXPECT_NEAR(forward({2, 576, 2, 2}, true), 5 + 5.76 + 23.04 + 4.608, 1e-6);
  EXPECT_NEAR(forward({32, 300}, true), 5 + 3 + 9.6, 1e-6);
  EXPECT_LT(forward({2, 576, 2, 2}, false), 3.0);
  EXPECT_LT(forward({2, 576, 2, 2}, true, 1u), 3.0);
  HwProfile none = handProfile();
  none.bandwidth["batchnorm"] = hw.bandwidth["batchnorm"];
  const OpModel without(none, "uniform");
  EXPECT_LT(forward({2, 576, 2, 2}, true, 0, &without), 3.0);
}

// What batch_norm calls on a GPU reads the batch norm curves: cuDNN's
// backward over grad_output, input and grad_input (3 x 3200 bytes) at the
// backward curve's point there. Catches the elementwise curve it read
// before (3 us at 6000 bytes and beyond) and the forward's curve.
TEST(OpModel, CudnnBatchNormReadsTheBatchNormCurves) {
  HwProfile hw = handProfile();
  hw.bandwidth["batchnorm"] = {{9600, 5}, {19200, 10}};
  hw.bandwidth["batchnorm_backward"] = {{9600, 40}, {19200, 80}};
  TraceBuilder b;
  const auto x = b.tensor({2, 4, 10, 10}), g = b.tensor({2, 4, 10, 10}), gx = b.tensor({2, 4, 10, 10});
  b.op("aten::cudnn_batch_norm_backward(Tensor input, Tensor grad_output, Tensor weight, "
       "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_var, "
       "float epsilon, Tensor reserveSpace) -> (Tensor, Tensor, Tensor)",
       {x, g}, {gx});
  const trace::Trace t = b.finish();
  const OpEstimate e = OpModel(hw, "uniform").estimate(t, t.nodes[2]);
  EXPECT_EQ(e.family, "memory:batchnorm_backward");
  EXPECT_NEAR(e.us, 40.0, 1e-9);
}

// The fused attention kernels cost the GEMMs they run at the bmm curve's
// rate (every point here 1e6 flops per us): forward Q K^T and P V, backward
// the scores again, dP, dV, dQ and dK. q [2, 4, 128, 64], k [2, 4, 256, 64],
// v [2, 4, 256, 32]: b = 8 heads' worth, L = 128, S = 256, E = 64, Ev = 32.
// The kernel behind it takes [B, L, H, E]; a backward's query follows
// grad_out (shaped like the output, [.., Ev], so reading it as the query
// costs other GEMMs). Catches a layout read the wrong way (L and H
// swapped), the backward's query taken from argument 0, the backward's five
// GEMMs counted as the forward's two, and the bytes fallback (a few us).
TEST(OpModel, FusedAttentionCostsItsGemmsAtTheBmmRate) {
  HwProfile hw = handProfile();
  hw.bmm = {{2, 16, 16, 16, 2 * 2 * 16 * 16 * 16 / 1e6}, {64, 512, 512, 128, 2.0 * 64 * 512 * 512 * 128 / 1e6}};
  const OpModel model(hw, "uniform");
  const double b = 8, l = 128, s = 256, e = 64, ev = 32;
  const double fwd = (2 * b * l * s * e + 2 * b * l * s * ev) / 1e6;
  const double bwd = (2 * 2 * b * l * s * e + 2 * b * s * ev * l + 2 * 2 * b * l * s * e) / 1e6;
  const auto estimate = [&](const char* schema, bool heads_first, bool backward) {
    TraceBuilder tb;
    const auto shape = [&](int64_t seq, int64_t width) {
      return heads_first ? std::vector<int64_t>{2, 4, seq, width} : std::vector<int64_t>{2, seq, 4, width};
    };
    const auto q = tb.tensor(shape(128, 64)), k = tb.tensor(shape(256, 64)), v = tb.tensor(shape(256, 32));
    const auto o = tb.tensor(shape(128, 32));
    if (backward) {
      const auto go = tb.tensor(shape(128, 32));
      const auto gq = tb.tensor(shape(128, 64)), gk = tb.tensor(shape(256, 64)), gv = tb.tensor(shape(256, 32));
      tb.op(schema, {go, q, k, v}, {gq, gk, gv});
    } else {
      tb.op(schema, {q, k, v}, {o});
    }
    const trace::Trace t = tb.finish();
    const OpEstimate est = model.estimate(t, t.nodes[2]);
    EXPECT_EQ(est.family, "attention") << schema;
    return est.us;
  };
  EXPECT_NEAR(estimate("aten::_scaled_dot_product_efficient_attention(Tensor query, Tensor key, "
                       "Tensor value, Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0., "
                       "bool is_causal=False, *, float? scale=None) -> (Tensor output, Tensor "
                       "log_sumexp, Tensor philox_seed, Tensor philox_offset)", true, false),
              fwd, 1e-6);
  EXPECT_NEAR(estimate("aten::_efficient_attention_forward(Tensor query, Tensor key, Tensor value, "
                       "Tensor? bias, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, SymInt? "
                       "max_seqlen_q, SymInt? max_seqlen_k, float dropout_p, int custom_mask_type, "
                       "bool compute_log_sumexp=False, *, float? scale=None) -> (Tensor output, "
                       "Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, SymInt "
                       "max_seqlen_batch_q, SymInt max_seqlen_batch_k)", false, false),
              fwd, 1e-6);
  EXPECT_NEAR(estimate("aten::_scaled_dot_product_flash_attention_backward(Tensor grad_out, Tensor "
                       "query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, Tensor "
                       "cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, "
                       "bool is_causal, Tensor philox_seed, Tensor philox_offset, *, float? "
                       "scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
                       true, true),
              bwd, 1e-6);
  EXPECT_NEAR(estimate("aten::_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor "
                       "key, Tensor value, Tensor? bias, Tensor out, Tensor? cu_seqlens_q, Tensor? "
                       "cu_seqlens_k, SymInt max_seqlen_q, SymInt max_seqlen_k, Tensor logsumexp, "
                       "float dropout_p, Tensor philox_seed, Tensor philox_offset, int "
                       "custom_mask_type, bool bias_requires_grad, *, float? scale=None, int? "
                       "num_splits_key=None) -> (Tensor, Tensor, Tensor, Tensor)", false, true),
              bwd, 1e-6);
}

TEST(OpModel, CollectivesReadTheirCurveAndRescaleToAnotherGroupSize) {
  HwProfile hw = handProfile();
  hw.collectives = {{"all_reduce", 2, 1e6, 100}, {"all_reduce", 2, 4e6, 400}};
  const OpModel model(hw, "uniform");
  EXPECT_NEAR(model.collectiveUs("all_reduce", 2, 2e6), 200, 1e-6);
  // A ring moves (n-1)/n per rank: 4 ranks move 3/4 against 2 ranks' 1/2.
  EXPECT_NEAR(model.collectiveUs("all_reduce", 4, 2e6), 300, 1e-6);
  EXPECT_LT(model.collectiveUs("all_gather", 2, 2e6), 0);
}

}  // namespace
}  // namespace etb::predict
