// SPDX-License-Identifier: MIT
// The models of ops whose cost is not their bytes on one class curve:
// reductions by shape family and width, element kernels with curves of
// their own, and the embedding_bag backward by lookups and distinct rows.
// Expected values are worked here from the hand-made curves (closed forms),
// and the distinct-row count against et_replay's own index sampler.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "predictor/op_model.h"
#include "replayer/zipf.h"
#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::TraceBuilder;
using trace::DType;

constexpr double kMiB = 1024.0 * 1024;

HwProfile reductionProfile() {
  HwProfile hw;
  hw.dispatch_us = 1.0;
  hw.view_us = 0.5;
  hw.bandwidth["unary"] = {{1000, 2}, {kMiB, 20}};
  // A full reduction streams 1 MiB in 10 us; a sum over the batch at
  // inner width 16 in 30 us, at 1024 in 120 us; rows of 64 in 50 us.
  hw.bandwidth["reduction"] = {{1024, 1}, {kMiB, 10}};
  hw.bandwidth[reductionCurve("outer", 16)] = {{1024, 1}, {kMiB, 30}};
  hw.bandwidth[reductionCurve("outer", 1024)] = {{8192, 2}, {kMiB, 120}};
  hw.bandwidth[reductionCurve("rows", 64)] = {{1024, 1}, {kMiB, 50}};
  return hw;
}

const char* kSumDim =
    "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";

// Fault caught: every reduction on the full-reduction curve (the bias
// gradient's sum over the batch predicted at 1/12 of its time), the width
// taken from the wrong side of the reduced dims, or an out= tensor's bytes
// counted as read.
TEST(ReductionModel, ASumOverTheBatchReadsTheOuterCurveAtItsWidth) {
  const OpModel model(reductionProfile(), "uniform");
  TraceBuilder b;
  const auto none = trace::makeNone(b.trace()), keep = trace::makeBool(b.trace(), true);
  const auto g = b.tensor({256, 1024}), bias = b.tensor({1, 1024});  // 1 MiB in
  b.op(kSumDim, {g, test::intList(b.trace(), {0}), keep, none}, {bias});
  const auto g16 = b.tensor({16384, 16}), b16 = b.tensor({16});
  b.op(kSumDim, {g16, test::intList(b.trace(), {0}), trace::makeBool(b.trace(), false), none}, {b16});
  const auto g128 = b.tensor({2048, 128}), b128 = b.tensor({128});
  b.op(kSumDim, {g128, test::intList(b.trace(), {-2}), trace::makeBool(b.trace(), false), none}, {b128});
  // sum.IntList_out over the middle dim of [8, 128, 256]: inner width 256;
  // the out= tensor is an input that is not read.
  const auto x = b.tensor({8, 128, 256}), out = b.tensor({8, 256});
  b.op("aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, "
       "Tensor(a!) out) -> Tensor(a!)",
       {x, test::intList(b.trace(), {1}), trace::makeBool(b.trace(), false), trace::makeInt(b.trace(), 6), out}, {out});
  const trace::Trace t = b.finish();
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 120, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:reduction:outer");
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 30, 1e-6);
  // 128 is half way from 16 to 1024 in log width: the geometric mean.
  EXPECT_NEAR(model.estimate(t, t.nodes[4]).us, std::sqrt(30.0 * 120.0), 1e-6);
  // 256: two thirds of the way (log2 16 -> 8 of 4 -> 10).
  EXPECT_NEAR(model.estimate(t, t.nodes[5]).us, std::exp(std::log(30.0) / 3 + 2 * std::log(120.0) / 3), 1e-6);
}

// Fault caught: a row reduction or a full one read on the outer curve, or
// sum(self, dtype)'s Int taken for a dim.
TEST(ReductionModel, RowsAndFullReductionsReadTheirOwnCurves) {
  const OpModel model(reductionProfile(), "uniform");
  TraceBuilder b;
  const auto none = trace::makeNone(b.trace());
  const auto x = b.tensor({4096, 64}), y = b.tensor({4096});
  b.op(kSumDim, {x, test::intList(b.trace(), {-1}), trace::makeBool(b.trace(), false), none}, {y});
  const auto s = b.tensor({}, DType::kFloat);
  b.op("aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", {x, trace::makeInt(b.trace(), 6)}, {s});
  const trace::Trace t = b.finish();
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 50, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:reduction:rows");
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 10, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[3]).family, "memory:reduction");
}

// Fault caught: masked_fill costed as a copy (its scalar loop over a
// broadcast mask ran 14x the copy curve's time), or a profile measured
// before the curve existed no longer read.
TEST(ElementClasses, MaskedFillReadsItsOwnCurveAndOldProfilesTheUnaryOne) {
  HwProfile hw = reductionProfile();
  TraceBuilder b;
  const auto x = b.tensor({8, 4, 64, 64}), mask = b.tensor({64, 64}, DType::kBool);
  const auto y = b.tensor({8, 4, 64, 64});
  b.op("aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
       {x, mask, trace::makeDouble(b.trace(), -1e30)}, {y});
  const auto gy = b.tensor({1 << 16}), gx = b.tensor({1 << 16}), gi = b.tensor({1 << 16});
  b.op("aten::gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor",
       {gy, gx, trace::makeString(b.trace(), "none")}, {gi});
  const trace::Trace t = b.finish();
  const double bytes = 2 * 512 * 1024 + 4096;  // self, mask, out
  // Beyond the unary curve's last point (1 MiB, 20 us): its bandwidth.
  EXPECT_NEAR(OpModel(hw, "uniform").estimate(t, t.nodes[2]).us, 20 * bytes / kMiB, 1e-6);
  hw.bandwidth["op:masked_fill"] = {{1000, 3}, {bytes, 700}};
  hw.bandwidth["op:gelu_backward"] = {{3 * 262144.0, 90}};
  hw.bandwidth["op:gelu"] = {{3 * 262144.0, 30}};
  const OpModel model(hw, "uniform");
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 700, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:op:masked_fill");
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 90, 1e-6);
}

// The expected distinct rows against et_replay's own samplers: the mean
// over draws of the distinct indices. Fault caught: the lookups taken for
// distinct rows, the Zipf normaliser or tail wrong, the 2^22 cap dropped.
TEST(EmbeddingModel, ExpectedDistinctRowsMatchTheReplaySamplers) {
  std::mt19937_64 rng(7);
  struct Case {
    int64_t rows, lookups;
    std::string dist;
  };
  for (const Case& c : {Case{100000, 10240, "zipf:1.1"}, Case{1000, 8192, "zipf:1.05"},
                        Case{8000000, 4096, "zipf:0.9"}, Case{100000, 10240, "uniform"},
                        Case{1000, 2048, "uniform"}}) {
    double sum = 0;
    const int kDraws = c.rows > 1000000 ? 4 : 40;  // 4M-rank tables: few draws, tight spread
    for (int d = 0; d < kDraws; ++d) {
      std::set<int64_t> seen;
      if (c.dist == "uniform") {
        std::uniform_int_distribution<int64_t> u(0, c.rows - 1);
        for (int64_t i = 0; i < c.lookups; ++i) seen.insert(u(rng));
      } else {
        for (const int64_t i : replay::zipfSamples(c.rows, std::stod(c.dist.substr(5)), c.lookups, rng)) seen.insert(i);
      }
      sum += static_cast<double>(seen.size());
    }
    const double mean = sum / kDraws;
    EXPECT_NEAR(expectedUniqueRows(static_cast<double>(c.rows), static_cast<double>(c.lookups), c.dist), mean,
                0.01 * mean)
        << c.dist << " rows " << c.rows;
  }
}

// A profile whose backward points are exactly fill + sort + a * lookups +
// b * distinct rows (a = 0.05, b = 0.2 us) for both distributions: the
// model must give that sum at a batch and pooling it never measured. The
// per-distribution line through the poolings (the model before) misses it:
// the sort's rate changes between poolings, the distinct rows of Zipf
// lookups grow slower than the lookups, and another alpha touches another
// number of rows.
TEST(EmbeddingModel, TheDenseBackwardIsFillSortLookupsAndDistinctRows) {
  HwProfile hw = reductionProfile();
  hw.bandwidth["fill"] = {{1000, 0.1}, {1e9, 1e5}};  // 10 GB/s throughout
  hw.bandwidth["op:sort_int64"] = {{8 * 256.0, 5}, {8 * 4096.0, 40}, {8 * 8192.0, 300}, {8 * 32768.0, 1500}};
  const double rows = 100000, dim = 64, a = 0.05, b = 0.2;
  const auto truth = [&](const HwProfile& p, double n, const std::string& dist) {
    return rows * dim * 4 / 1e4 + curveUs(p.bandwidth.at("op:sort_int64"), 8 * n) + a * n +
           b * expectedUniqueRows(rows, n, dist);
  };
  for (const char* dist : {"uniform", "zipf:1.1"}) {
    for (const int64_t pooling : {1, 8, 32}) {
      const double bwd = truth(hw, 256.0 * pooling, dist);
      hw.embedding.push_back({100000, 64, 256, pooling, dist, 10.0 + pooling, bwd, 0});
    }
  }
  TraceBuilder tb;
  const auto grad = tb.tensor({512, 64}), idx = tb.tensor({10240}, DType::kInt64);
  const auto off = tb.tensor({512}, DType::kInt64), o2b = tb.tensor({0}, DType::kInt64);
  const auto size = tb.tensor({512}, DType::kInt64), maxi = tb.tensor({512}, DType::kInt64);
  const auto wgrad = tb.tensor({100000, 64});
  tb.op("aten::_embedding_bag_backward(Tensor grad, Tensor indices, Tensor offsets, ...) -> Tensor",
        {grad, idx, off, o2b, size, maxi, trace::makeInt(tb.trace(), 100000), trace::makeBool(tb.trace(), false),
         trace::makeInt(tb.trace(), 0), trace::makeBool(tb.trace(), false), trace::makeNone(tb.trace()),
         trace::makeInt(tb.trace(), -1)},
        {wgrad});
  const trace::Trace t = tb.finish();
  // zipf:1.3 was never measured: its distinct rows, not the nearest
  // measured distribution's line, set its time.
  for (const char* dist : {"uniform", "zipf:1.1", "zipf:1.3"}) {
    const OpEstimate e = OpModel(hw, dist).estimate(t, t.nodes[2]);
    EXPECT_EQ(e.family, "embedding_bag");
    EXPECT_NEAR(e.us, truth(hw, 10240, dist), 1e-3 * truth(hw, 10240, dist)) << dist;
  }
}

}  // namespace
}  // namespace etb::predict
