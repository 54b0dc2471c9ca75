// SPDX-License-Identifier: MIT
// The models of ops whose cost is not their bytes on one class curve:
// reductions by shape family and width, element kernels with curves of
// their own, and the embedding_bag backward by lookups and distinct rows.
// Expected values are worked here from the hand-made curves (closed forms),
// and the distinct-row count against et_replay's own index sampler.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "predictor/interp.h"
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

// Rows shorter than a vector read their own curves: a global average
// pool's sum over 2 x 2 maps ([2, 1280, 2, 2] over dims 2 and 3: 2,560 rows
// of 4, 40 KiB) reads rows:4 at its bytes, and rows of 3 the geometric
// interpolation between rows:2 and rows:4 at log2(3) - 1 of the way; a
// profile without them keeps the shortest longer row's curve (64 here).
// Fault caught: the short lengths never looked up (rows:64's 2 us), or
// the map's dims taken for the rows.
TEST(ReductionModel, RowsShorterThanAVectorReadTheirOwnCurves) {
  HwProfile hw = reductionProfile();
  const auto query = [](const OpModel& model, std::vector<int64_t> shape) {
    TraceBuilder b;
    const auto x = b.tensor(shape), y = b.tensor({shape[0], shape[1], 1, 1});
    b.op(kSumDim, {x, test::intList(b.trace(), {2, 3}), trace::makeBool(b.trace(), true), trace::makeNone(b.trace())},
         {y});
    const trace::Trace t = b.finish();
    return model.estimate(t, t.nodes[2]);
  };
  const double old = query(OpModel(hw, "uniform"), {2, 1280, 2, 2}).us;
  EXPECT_NEAR(old, curveUs(hw.bandwidth[reductionCurve("rows", 64)], 40960), 1e-9);
  hw.bandwidth[reductionCurve("rows", 2)] = {{1024, 4}, {kMiB, 900}};
  hw.bandwidth[reductionCurve("rows", 4)] = {{1024, 3}, {40960, 21}, {kMiB, 500}};
  const OpModel model(hw, "uniform");
  const OpEstimate four = query(model, {2, 1280, 2, 2});
  EXPECT_NEAR(four.us, 21, 1e-9);
  EXPECT_EQ(four.family, "memory:reduction:rows");
  const double f = std::log2(3.0) - 1;
  const double bytes = 2 * 1280 * 3 * 4.0;  // [2, 1280, 3, 1]
  EXPECT_NEAR(query(model, {2, 1280, 3, 1}).us,
              std::exp((1 - f) * std::log(curveUs(hw.bandwidth[reductionCurve("rows", 2)], bytes)) +
                       f * std::log(curveUs(hw.bandwidth[reductionCurve("rows", 4)], bytes))),
              1e-9);
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

// The long tail reads its own curves by name: a mean-reduced mse_loss over
// [8, 1, 32, 32] and a target (2 x 32 KiB in, a 4-byte scalar out) log-log
// between the curve's two points; ReLU6's in-place hardtanh_ over 1,000
// floats (in and out the same tensor: 8,000 bytes) on hardtanh's curve;
// without the curves mse_loss is the elementwise fallback it was. Catches
// a name not looked up, an in-place form left on the classes, bytes that
// leave the output or an input out, and an old profile sent to an empty
// curve.
TEST(ElementClasses, LongTailOpsReadTheirOwnCurves) {
  HwProfile hw = reductionProfile();
  TraceBuilder b;
  const auto x = b.tensor({8, 1, 32, 32}), target = b.tensor({8, 1, 32, 32}), loss = b.tensor({});
  b.op("aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor",
       {x, target, trace::makeInt(b.trace(), 1)}, {loss});
  const auto a = b.tensor({1000});
  b.op("aten::hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)",
       {a, trace::makeDouble(b.trace(), 0.0), trace::makeDouble(b.trace(), 6.0)}, {a});
  const trace::Trace t = b.finish();
  const OpEstimate old = OpModel(hw, "uniform").estimate(t, t.nodes[2]);
  EXPECT_TRUE(old.fallback);
  EXPECT_EQ(old.family, "memory:elementwise");
  hw.bandwidth["op:mse_loss"] = {{1000, 10}, {100000, 100}};
  hw.bandwidth["op:hardtanh"] = {{4000, 2}, {16000, 8}};
  const OpModel model(hw, "uniform");
  const OpEstimate mse = model.estimate(t, t.nodes[2]);
  const double bytes = 2 * 32768.0 + 4;
  EXPECT_NEAR(mse.us, 10 * std::pow(10.0, std::log(bytes / 1000) / std::log(100.0)), 1e-6);
  EXPECT_EQ(mse.family, "memory:op:mse_loss");
  EXPECT_FALSE(mse.fallback);
  const OpEstimate relu6 = model.estimate(t, t.nodes[3]);
  EXPECT_NEAR(relu6.us, 2 * std::pow(4.0, std::log(2.0) / std::log(4.0)), 1e-6);
  EXPECT_EQ(relu6.family, "memory:op:hardtanh");
}

// Advanced indexing that picks elements: DLRM's interaction gather
// x[:, i, j] over the last two dims of [512, 9, 9] (36 of each row's 81) and
// its accumulating put read their own curves, at twice the output's and
// three times the values' bytes (each curve's last point sits at exactly
// those bytes); one index tensor on dim 0 of a table gathers whole rows and
// keeps the copy curve, as does every index in a profile without the
// curves. Fault caught: the element gather priced as a stream of its bytes
// (dlrm's replayed at 71 us, predicted 2.4).
TEST(ElementClasses, AnIndexThatPicksElementsReadsTheIndexCurves) {
  HwProfile hw = reductionProfile();
  TraceBuilder b;
  const auto x = b.tensor({512, 9, 9}), i = b.tensor({36}, DType::kInt64), j = b.tensor({36}, DType::kInt64);
  trace::Value pick;
  pick.kind = trace::ValueKind::kList;
  pick.items = {trace::makeNone(b.trace()), i, j};
  const auto y = b.tensor({512, 36});
  b.op("aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", {x, pick}, {y});
  const auto g = b.tensor({512, 9, 9}), v = b.tensor({512, 36});
  b.op("aten::_index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False, "
       "bool unsafe=False) -> Tensor(a!)",
       {g, pick, v, trace::makeBool(b.trace(), true), trace::makeBool(b.trace(), true)}, {g});
  const auto table = b.tensor({1000, 64}), ids = b.tensor({512}, DType::kInt64), got = b.tensor({512, 64});
  trace::Value rows;
  rows.kind = trace::ValueKind::kList;
  rows.items = {ids};
  b.op("aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", {table, rows}, {got});
  const trace::Trace t = b.finish();
  EXPECT_EQ(OpModel(hw, "uniform").estimate(t, t.nodes[2]).family, "memory:copy");
  const double out = 4.0 * 512 * 36;
  hw.bandwidth["op:index"] = {{1000, 2}, {2 * out, 70}};
  hw.bandwidth["op:index_put"] = {{1000, 2}, {3 * out, 60}};
  const OpModel model(hw, "uniform");
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 70, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:op:index");
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 60, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[3]).family, "memory:op:index_put");
  EXPECT_EQ(model.estimate(t, t.nodes[4]).family, "memory:copy");
}

// Sums by index: a GNN's index_add_ of 800 rows of 64 floats reads the
// rows:16 and rows:256 curves at the source's 200 KiB and takes the
// log-linear point between them at 64 (halfway in log: the geometric mean
// of 40 and 10 us); a 1-D index_add_ reads rows:1 and a scatter_add_ its
// own curve at three times the source's bytes. Without the curves both
// stay on the in-place curve. Fault caught: index_add_ priced as an
// in-place add of its bytes (wild_gnn's replayed at 25x that).
TEST(ElementClasses, SumsByIndexReadTheirCurvesBySliceLength) {
  HwProfile hw = reductionProfile();
  hw.bandwidth["inplace"] = {{1000, 1}, {kMiB, 4}};
  TraceBuilder b;
  const auto table = b.tensor({100, 64}), idx = b.tensor({800}, DType::kInt64), src = b.tensor({800, 64});
  b.op("aten::index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)",
       {table, trace::makeInt(b.trace(), 0), idx, src, trace::makeInt(b.trace(), 1)}, {table});
  const auto flat = b.tensor({100}), fsrc = b.tensor({800});
  b.op("aten::index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)",
       {flat, trace::makeInt(b.trace(), 0), idx, fsrc, trace::makeInt(b.trace(), 1)}, {flat});
  b.op("aten::scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)",
       {flat, trace::makeInt(b.trace(), 0), idx, fsrc}, {flat});
  const trace::Trace t = b.finish();
  EXPECT_EQ(OpModel(hw, "uniform").estimate(t, t.nodes[2]).family, "memory:inplace");
  EXPECT_EQ(OpModel(hw, "uniform").estimate(t, t.nodes[4]).family, "memory:inplace");
  const double bytes = 4.0 * 800 * 64;
  hw.bandwidth[rowsCurve("op:index_add", 16)] = {{1000, 1}, {bytes, 40}};
  hw.bandwidth[rowsCurve("op:index_add", 256)] = {{1000, 1}, {bytes, 10}};
  hw.bandwidth[rowsCurve("op:index_add", 1)] = {{1000, 1}, {4.0 * 800, 3}};
  hw.bandwidth["op:scatter_add"] = {{1000, 1}, {3 * 4.0 * 800, 7}};
  const OpModel model(hw, "uniform");
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 20, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:op:index_add:rows");
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 3, 1e-6);
  EXPECT_NEAR(model.estimate(t, t.nodes[4]).us, 7, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[4]).family, "memory:op:scatter_add");
}

// An in-place special function reads its out-of-place curve (silu_ on
// silu's: 65536 floats read and written, 512 KiB, 40 us), and silu's
// gradient silu's curve over its three tensors (768 KiB: log-log between
// 40 us at 512 KiB and 100 at 1 MiB). Faults caught: silu_ on the in-place
// add's curve, silu_backward on the elementwise one.
TEST(ElementClasses, InPlaceSpecialFunctionsAndSilusGradientReadTheSpecialCurve) {
  HwProfile hw = reductionProfile();
  hw.bandwidth["inplace"] = {{1000, 1}, {kMiB, 4}};
  hw.bandwidth["op:silu"] = {{kMiB / 2, 40}, {kMiB, 100}};
  TraceBuilder b;
  const auto x = b.tensor({1 << 16});
  b.op("aten::silu_(Tensor(a!) self) -> Tensor(a!)", {x}, {x});
  const auto g = b.tensor({1 << 16}), gi = b.tensor({1 << 16});
  b.op("aten::silu_backward(Tensor grad_output, Tensor self) -> Tensor", {g, x}, {gi});
  const trace::Trace t = b.finish();
  const OpModel model(hw, "uniform");
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, 40, 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:op:silu");
  const double f = std::log(0.75 * kMiB / (kMiB / 2)) / std::log(2.0);
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, 40 * std::pow(100.0 / 40, f), 1e-6);
}

// A public CPU trace (to(float32) of two [1024, 1024] doubles, then matmul)
// put aten::detach_ of each 4 MiB result on the in-place curve: 190 us per
// call for an op that only clears the autograd metadata, and resolve_conj
// (the tensor itself when no conjugate bit is set) on a byte curve too.
// Fault caught: either costed by its bytes instead of one view call.
TEST(ElementClasses, MetadataOnlyOpsCostOneViewCall) {
  const HwProfile hw = reductionProfile();  // the model keeps a reference
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  const auto x = b.tensor({1024, 1024});
  b.op("aten::detach_(Tensor(a!) self) -> Tensor(a!)", {x}, {x});
  b.op("aten::resolve_conj(Tensor(a) self) -> Tensor(a)", {x}, {x});
  b.op("aten::unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)", {x, trace::makeInt(b.trace(), 0)}, {x});
  const trace::Trace t = b.finish();
  for (size_t i = 2; i < 5; ++i) {
    EXPECT_NEAR(model.estimate(t, t.nodes[i]).us, 0.5, 1e-9) << t.name(t.nodes[i]);
    EXPECT_EQ(model.estimate(t, t.nodes[i]).family, "view") << t.name(t.nodes[i]);
  }
}

// A softmax costs passes per row: it reads the curve of its row length,
// log-linear in log length between the measured ones (rows of 256 on the
// op's own curve), clamped beyond them; over another dim, or from a profile
// without row curves, the op's one curve. A row that does not fill whole
// vectors reads the tail lengths' curves. Every op here moves 1 MiB
// (forward: input and output) or 1.5 MiB (backward: three tensors), where
// the hand-made curves have points. Fault caught: the row taken from the
// first dim or from the backward's output tensor (input 1), no clamp, the
// rows-of-256 curve left out, a softmax over dim 0 read on the rows curves,
// a row of 17 on the whole-vector curves (or 16 on the tail ones).
TEST(ElementClasses, ASoftmaxReadsTheCurveOfItsRowLength) {
  HwProfile hw = reductionProfile();
  hw.bandwidth["op:_softmax"] = {{1024, 4}, {kMiB, 40}};
  hw.bandwidth[rowsCurve("op:_softmax", 8)] = {{1024, 10}, {kMiB, 400}};
  hw.bandwidth[rowsCurve("op:_softmax", 64)] = {{1024, 6}, {kMiB, 100}};
  hw.bandwidth[rowsCurve("op:_softmax", 4096)] = {{32768, 3}, {kMiB, 30}};
  // Rows that end in a tail (not whole vectors of 8 floats): flat curves.
  hw.bandwidth[rowsCurve("op:_softmax", 9)] = {{1024, 800}, {4 * kMiB, 800}};
  hw.bandwidth[rowsCurve("op:_softmax", 65)] = {{1024, 200}, {4 * kMiB, 200}};
  hw.bandwidth["op:_softmax_backward_data"] = {{1024, 1}, {1.5 * kMiB, 45}};
  hw.bandwidth[rowsCurve("op:_softmax_backward_data", 8)] = {{1024, 1}, {1.5 * kMiB, 300}};
  hw.bandwidth[rowsCurve("op:_softmax_backward_data", 64)] = {{1024, 1}, {1.5 * kMiB, 90}};
  const OpModel model(hw, "uniform");
  TraceBuilder b;
  trace::Trace& tr = b.trace();
  const char* kSoftmax = "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor";
  const auto no = trace::makeBool(tr, false);
  const auto r128 = b.tensor({1024, 128}), o128 = b.tensor({1024, 128});
  b.op(kSoftmax, {r128, trace::makeInt(tr, -1), no}, {o128});
  const auto r16 = b.tensor({64, 128, 16}), o16 = b.tensor({64, 128, 16});
  b.op("aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
       {r16, trace::makeInt(tr, 2), trace::makeNone(tr)}, {o16});
  const auto r8k = b.tensor({16, 8192}), o8k = b.tensor({16, 8192});
  b.op(kSoftmax, {r8k, trace::makeInt(tr, 1), no}, {o8k});
  const auto d0 = b.tensor({1024, 128});
  b.op(kSoftmax, {r128, trace::makeInt(tr, 0), no}, {d0});
  const auto r17 = b.tensor({512, 17}), o17 = b.tensor({512, 17});
  b.op(kSoftmax, {r17, trace::makeInt(tr, -1), no}, {o17});
  const auto g16 = b.tensor({8192, 16}), y16 = b.tensor({8192, 16}), gx = b.tensor({8192, 16});
  b.op("aten::_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
       {g16, y16, trace::makeInt(tr, -1), trace::makeInt(tr, 6)}, {gx});
  const trace::Trace t = b.finish();
  // 128: half way from 64 to 256 in log length.
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, std::sqrt(100.0 * 40.0), 1e-6);
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "memory:op:_softmax:rows");
  // 16: a third of the way from 8 to 64.
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, std::exp(2 * std::log(400.0) / 3 + std::log(100.0) / 3), 1e-6);
  EXPECT_NEAR(model.estimate(t, t.nodes[4]).us, 30, 1e-6);  // beyond 4096
  EXPECT_NEAR(model.estimate(t, t.nodes[5]).us, 40, 1e-6);  // over dim 0
  EXPECT_EQ(model.estimate(t, t.nodes[5]).family, "memory:op:_softmax");
  // 17 ends in a tail: between the tail curves' 9 and 65.
  const double f17 = std::log(17.0 / 9) / std::log(65.0 / 9);
  EXPECT_NEAR(model.estimate(t, t.nodes[6]).us, std::exp((1 - f17) * std::log(800.0) + f17 * std::log(200.0)), 1e-6);
  EXPECT_NEAR(model.estimate(t, t.nodes[7]).us, std::exp(2 * std::log(300.0) / 3 + std::log(90.0) / 3), 1e-6);

  HwProfile older = reductionProfile();  // measured before the row curves
  older.bandwidth["op:_softmax"] = hw.bandwidth["op:_softmax"];
  const OpModel old_model(older, "uniform");
  EXPECT_NEAR(old_model.estimate(t, t.nodes[3]).us, 40, 1e-6);
  EXPECT_EQ(old_model.estimate(t, t.nodes[3]).family, "memory:op:_softmax");
}

// 2-D pooling: a time per output element growing with the window, from the
// 2x2 and 3x3 curves over 4 bytes per output element. resnet18's
// max_pool2d ([8,64,56,56], 3x3) was predicted on the bytes-moved fallback
// at 1/25 of its replayed time. Each curve here runs 5 ns (2x2) or 10 ns
// (3x3) per output element; the backward 1 ns per element of both
// gradients. Fault caught: the window ignored, the curve read at the
// input's elements, the backward read on a forward curve.
TEST(PoolModel, TimeGoesWithTheOutputsAndTheWindow) {
  HwProfile hw = reductionProfile();
  const char* kMaxPool =
      "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
      "int[2] dilation=1, bool ceil_mode=False) -> Tensor";
  TraceBuilder b;
  trace::Trace& tr = b.trace();
  const auto x = b.tensor({8, 64, 56, 56}), y = b.tensor({8, 64, 28, 28});
  const auto pool = [&](std::vector<int64_t> k) {
    b.op(kMaxPool, {x, test::intList(tr, k), test::intList(tr, {2, 2}), test::intList(tr, {1, 1}),
                    test::intList(tr, {1, 1}), trace::makeBool(tr, false)},
         {y});
  };
  pool({3, 3});
  pool({2, 2});
  pool({5});  // one int: a square window
  const auto idx = b.tensor({8, 64, 28, 28}, DType::kInt64), gx = b.tensor({8, 64, 56, 56});
  b.op("aten::max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
       "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
       {y, x, test::intList(tr, {3, 3}), test::intList(tr, {2, 2}), test::intList(tr, {1, 1}),
        test::intList(tr, {1, 1}), trace::makeBool(tr, false), idx},
       {gx});
  const trace::Trace t = b.finish();
  const double outs = 8.0 * 64 * 28 * 28, ins = 4 * outs;
  // A profile from before the curves: not the pool model.
  EXPECT_NE(OpModel(hw, "uniform").estimate(t, t.nodes[2]).family, "pool");
  hw.bandwidth[poolCurve("max_pool2d", 2)] = {{4000, 5}, {4e6, 5000}};
  hw.bandwidth[poolCurve("max_pool2d", 3)] = {{4000, 10}, {4e6, 10000}};
  hw.bandwidth[poolCurve("max_pool2d_backward", 0)] = {{4000, 1}, {4e6, 1000}};
  const OpModel model(hw, "uniform");
  EXPECT_EQ(model.estimate(t, t.nodes[2]).family, "pool");
  EXPECT_NEAR(model.estimate(t, t.nodes[2]).us, outs * 10e-3, 1e-6);
  EXPECT_NEAR(model.estimate(t, t.nodes[3]).us, outs * 5e-3, 1e-6);
  // 25 elements: 5 ns + (25 - 4) / (9 - 4) of the 5 ns between the curves.
  EXPECT_NEAR(model.estimate(t, t.nodes[4]).us, outs * (5 + 5 * 21.0 / 5) * 1e-3, 1e-6);
  EXPECT_NEAR(model.estimate(t, t.nodes[5]).us, (outs + ins) * 1e-3, 1e-6);
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

// The dense backward of a 100000 x 64 table over 512 bags (10240 lookups),
// and a profile whose backward points at batch 256 and poolings 1, 8 and
// 32 are exactly fill + sort + a * lookups + b * distinct rows (a = 0.05,
// b = 0.2 us) for both distributions, times `scale(pooling)`.
struct DenseBackward {
  HwProfile hw = reductionProfile();
  trace::Trace t;
  static constexpr double kRows = 100000, kDim = 64, kA = 0.05, kB = 0.2;

  explicit DenseBackward(const std::function<double(int64_t)>& scale = [](int64_t) { return 1.0; },
                         int64_t lookups = 10240) {
    hw.bandwidth["fill"] = {{1000, 0.1}, {1e9, 1e5}};  // 10 GB/s throughout
    hw.bandwidth["op:sort_int64"] = {{8 * 256.0, 5}, {8 * 4096.0, 40}, {8 * 8192.0, 300}, {8 * 32768.0, 1500}};
    for (const char* dist : {"uniform", "zipf:1.1"}) {
      for (const int64_t pooling : {1, 8, 32}) {
        const double bwd = mechanism(256.0 * pooling, dist) * scale(pooling);
        hw.embedding.push_back({100000, 64, 256, pooling, dist, 10.0 + pooling, bwd, 0});
      }
    }
    TraceBuilder tb;
    const auto grad = tb.tensor({512, 64}), idx = tb.tensor({lookups}, DType::kInt64);
    const auto off = tb.tensor({512}, DType::kInt64), o2b = tb.tensor({0}, DType::kInt64);
    const auto size = tb.tensor({512}, DType::kInt64), maxi = tb.tensor({512}, DType::kInt64);
    const auto wgrad = tb.tensor({100000, 64});
    tb.op("aten::_embedding_bag_backward(Tensor grad, Tensor indices, Tensor offsets, ...) -> Tensor",
          {grad, idx, off, o2b, size, maxi, trace::makeInt(tb.trace(), 100000), trace::makeBool(tb.trace(), false),
           trace::makeInt(tb.trace(), 0), trace::makeBool(tb.trace(), false), trace::makeNone(tb.trace()),
           trace::makeInt(tb.trace(), -1)},
          {wgrad});
    t = tb.finish();
  }
  double mechanism(double n, const std::string& dist) const {
    return kRows * kDim * 4 / 1e4 + curveUs(hw.bandwidth.at("op:sort_int64"), 8 * n) + kA * n +
           kB * expectedUniqueRows(kRows, n, dist);
  }
  OpEstimate estimate(const std::string& dist, double cold = 0) const {
    return OpModel(hw, dist).estimate(t, t.nodes[2], cold);
  }
};

// The model must give the mechanism's sum at a batch and pooling it never
// measured. The per-distribution line through the poolings (the model
// before) misses it: the sort's rate changes between poolings, the
// distinct rows of Zipf lookups grow slower than the lookups, and another
// alpha touches another number of rows.
TEST(EmbeddingModel, TheDenseBackwardIsFillSortLookupsAndDistinctRows) {
  const DenseBackward b;
  // zipf:1.3 was never measured: its distinct rows, not the nearest
  // measured distribution's line, set its time.
  for (const char* dist : {"uniform", "zipf:1.1", "zipf:1.3"}) {
    const OpEstimate e = b.estimate(dist);
    EXPECT_EQ(e.family, "embedding_bag");
    EXPECT_NEAR(e.us, b.mechanism(10240, dist), 1e-3 * b.mechanism(10240, dist)) << dist;
  }
}

// nn.Embedding's backward (embedding_dense_backward) in a language model
// takes the gradient as the lookups were shaped, [batch, seq, dim]: priced
// as the table's backward over batch x seq lookups, the same as with the
// gradient flattened to [lookups, dim], and well over a copy of its
// arguments (what a 3-D gradient fell back to: 15 us for gpt's 1,024-row
// table, replayed at 48). Catches the width read from the second size
// (seq), the rows from the first (batch), or the fallback.
TEST(EmbeddingModel, ALanguageModelsEmbeddingBackwardIsTheTablesBackward) {
  const DenseBackward b;
  const auto backward = [](std::vector<int64_t> grad_shape, std::vector<int64_t> idx_shape) {
    TraceBuilder tb;
    const auto grad = tb.tensor(grad_shape), idx = tb.tensor(idx_shape, DType::kInt64);
    const auto wgrad = tb.tensor({100000, 64});
    tb.op("aten::embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
          "SymInt padding_idx, bool scale_grad_by_freq) -> Tensor",
          {grad, idx, trace::makeInt(tb.trace(), 100000), trace::makeInt(tb.trace(), -1),
           trace::makeBool(tb.trace(), false)},
          {wgrad});
    return tb.finish();
  };
  const trace::Trace seq = backward({20, 512, 64}, {20, 512}), flat = backward({10240, 64}, {10240});
  const OpModel model(b.hw, "uniform");
  const double us = model.estimate(seq, seq.nodes[2]).us;
  EXPECT_NEAR(us, model.estimate(flat, flat.nodes[2]).us, 1e-9 * us);
  EXPECT_NEAR(us, b.mechanism(10240, "uniform"), 1e-3 * us);
}

// Measured calls 1.2x the mechanism at pooling 8 and 1.6x at 32 (what real
// calls show: a fixed part per call, a sort faster on Zipf values). A
// trace's call at a measured lookup count takes the measured time, also
// with other bags (512 x 4 and 512 x 16 for the profile's 256 x 8 and
// 256 x 32). Uniform lookups between two counts take the ratio linear in
// log lookups (4096: sqrt(1.2 x 1.6) of the mechanism), beyond the last
// its ratio. Those within 1% and 2%: a and b are fitted to the scaled
// points, so the mechanism itself moves a little (Zipf's distinct rows magnify that,
// so for it only the order). Catches the ratio left out (20-40% off),
// interpolated in lookups rather than their log (4%), or extrapolated
// beyond 8192 (5%).
TEST(EmbeddingModel, TheMeasuredCallsScaleTheMechanismBetweenTheirLookupCounts) {
  const auto scale = [](int64_t pooling) { return pooling == 1 ? 1.0 : pooling == 8 ? 1.2 : 1.6; };
  for (const char* dist : {"uniform", "zipf:1.1"}) {
    for (const auto& [lookups, pooling] : {std::pair<int64_t, int64_t>{2048, 8}, {8192, 32}}) {
      const DenseBackward b(scale, lookups);
      const double want = scale(pooling) * b.mechanism(static_cast<double>(lookups), dist);
      EXPECT_NEAR(b.estimate(dist).us, want, 1e-6 * want) << dist << " " << lookups;
    }
  }
  const DenseBackward half(scale, 4096), beyond(scale, 10240);
  const double mid = std::sqrt(1.2 * 1.6) * half.mechanism(4096, "uniform");
  EXPECT_NEAR(half.estimate("uniform").us, mid, 1e-2 * mid);
  const double far = 1.6 * beyond.mechanism(10240, "uniform");
  EXPECT_NEAR(beyond.estimate("uniform").us, far, 2e-2 * far);
  EXPECT_LT(beyond.estimate("zipf:1.3").us, beyond.estimate("zipf:1.1").us);
}

// A section in which the gradient's fill cost 3 ms more than the curves say
// (its faults slower then, or the machine slowed) measured every backward
// 3 ms slower too. With the fill timed beside them (fill_us) that is the
// fill's, and the trace's backward, whose fill the heap model and the fill
// curve price, is predicted as before: the mechanism, within 1e-6. Without
// fill_us the same points read as a slower backward (over 5% here): what
// the control shows, and what ignoring fill_us in the fit would give.
TEST(EmbeddingModel, AFillTimedBesideTheBackwardKeepsASlowSectionOutOfIt) {
  const DenseBackward base;
  const double want = base.mechanism(10240, "uniform");
  ASSERT_NEAR(base.estimate("uniform").us, want, 1e-3 * want);
  constexpr double kExtra = 3000;
  const double curve_fill = DenseBackward::kRows * DenseBackward::kDim * 4 / 1e4;  // 10 GB/s
  DenseBackward slow = base, timed = base;
  for (EmbeddingPoint& e : slow.hw.embedding) e.bwd_us += kExtra;
  for (EmbeddingPoint& e : timed.hw.embedding) {
    e.bwd_us += kExtra;
    e.fill_us = curve_fill + kExtra;
  }
  EXPECT_NEAR(timed.estimate("uniform").us, base.estimate("uniform").us, 1e-6 * want);
  EXPECT_NEAR(timed.estimate("zipf:1.1").us, base.estimate("zipf:1.1").us, 1e-6 * want);
  EXPECT_GT(slow.estimate("uniform").us, 1.05 * base.estimate("uniform").us);
}

// Flushed calls measured 100 us + 0.05 us per lookup slower: an op whose
// inputs are 40% from DRAM pays 40% of that; a warm op nothing; a profile
// without flushed backward points (the gradient too large to stay cached)
// nothing either. Catches the share ignored or the extra taken per bag.
TEST(EmbeddingModel, AFlushedBackwardAddsItsExtraByTheDramShare) {
  DenseBackward b;
  const double warm = b.estimate("uniform").us;
  EXPECT_DOUBLE_EQ(b.estimate("uniform", 0.4).us, warm);
  for (EmbeddingPoint& e : b.hw.embedding) e.bwd_cold_us = e.bwd_us + 100 + 0.05 * e.batch * e.pooling;
  EXPECT_DOUBLE_EQ(b.estimate("uniform", 0).us, warm);
  EXPECT_NEAR(b.estimate("uniform", 0.4).us, warm + 0.4 * (100 + 0.05 * 10240), 1e-6 * warm);
}

// Distinct rows of `lookups` draws over `rows` rows, summed row by row
// (apart from the model's closed form and Simpson tail): uniform, or
// Zipf(alpha) by rank.
double distinctRowsBySum(double rows, double lookups, double alpha) {
  double h = 0;
  for (double k = 1; k <= rows; ++k) h += alpha > 0 ? std::pow(k, -alpha) : 1;
  double u = 0;
  for (double k = 1; k <= rows; ++k) u += 1 - std::pow(1 - (alpha > 0 ? std::pow(k, -alpha) : 1) / h, lookups);
  return u;
}

// A 5,000 x 64 table whose forward, with the rows it looks up evicted,
// measured 0.02 us more per distinct row (both distributions, poolings 1
// and 20 of 256 bags). A trace's lookup of 10,240 indices into it pays
// the cold share of 0.02 us per distinct row its distribution touches:
// 4,355 of 5,000 rows uniform, 1,820 under Zipf(1.1). Catches the
// extra taken per lookup (2.4x uniform's), the distribution ignored, the
// cold share ignored, and the old line through flushed calls (the
// flushed points here say nothing: fwd_cold_us 0).
TEST(EmbeddingModel, AColdLookupPaysPerDistinctRowItTouches) {
  HwProfile hw = reductionProfile();
  constexpr double kRows = 5000, kMiss = 0.02;
  for (const auto& [dist, alpha] : {std::pair<const char*, double>{"uniform", 0}, {"zipf:1.1", 1.1}}) {
    for (const int64_t pooling : {1, 20}) {
      const double n = 256.0 * pooling, warm = 5 + 0.01 * n;
      EmbeddingPoint e{5000, 64, 256, pooling, dist, warm, 50, 0};
      e.fwd_rows_cold_us = warm + kMiss * distinctRowsBySum(kRows, n, alpha);
      hw.embedding.push_back(e);
    }
  }
  TraceBuilder b;
  const auto w = b.tensor({5000, 64}), idx = b.tensor({10240}, DType::kInt64);
  const auto off = b.tensor({512}, DType::kInt64), out = b.tensor({512, 64});
  b.op("aten::embedding_bag(Tensor weight, Tensor indices, Tensor offsets, ...) -> (Tensor, Tensor, Tensor, Tensor)",
       {w, idx, off}, {out});
  const trace::Trace t = b.finish();
  const double warm = 5 + 0.01 * 10240;
  for (const auto& [dist, alpha] : {std::pair<const char*, double>{"uniform", 0}, {"zipf:1.1", 1.1}}) {
    const OpModel model(hw, dist);
    const double extra = kMiss * distinctRowsBySum(kRows, 10240, alpha);
    EXPECT_NEAR(model.estimate(t, t.nodes[2], 0).us, warm, 1e-6 * warm) << dist;
    EXPECT_NEAR(model.estimate(t, t.nodes[2], 1).us, warm + extra, 2e-3 * (warm + extra)) << dist;
    EXPECT_NEAR(model.estimate(t, t.nodes[2], 0.5).us, warm + extra / 2, 2e-3 * (warm + extra)) << dist;
  }
}

// Warm lookups measured on a grid of tables (1,000 and 100,000 rows, 16
// and 64 wide) costing 5 us + c(rows) (dim / 64)^0.8 per lookup, c = 2 ns
// and 8 ns. A 10,000 x 128 table lies between the rows (halfway in log
// rows: c = 4 ns) and beyond the widths: its lookups cost the widths'
// power carried on, 4 ns 2^0.8; an 8-wide table 4 ns (1/8)^0.8. A power
// of 1.5 measured is held at 1 (a cost at most in proportion to the
// row's bytes). Catches the widest measured width's cost taken (1.74x
// under), the widths mixed by distance (a 16-wide table's cost in the
// 64-wide one's), the rows read by nearest point (8 ns or 2), the
// power left unclamped.
TEST(EmbeddingModel, ATableBeyondTheMeasuredWidthsCarriesTheirPowerOfTheWidth) {
  const auto profile = [](double power) {
    HwProfile hw = reductionProfile();
    for (const int64_t rows : {1000, 100000}) {
      for (const int64_t dim : {16, 64}) {
        for (const int64_t pooling : {1, 20}) {
          const double per = (rows == 1000 ? 2e-3 : 8e-3) * std::pow(dim / 64.0, power);
          hw.embedding.push_back({rows, dim, 256, pooling, "uniform", 5 + per * 256.0 * pooling, 50, 0});
        }
      }
    }
    return hw;
  };
  const auto lookup = [](int64_t dim) {
    TraceBuilder b;
    const auto w = b.tensor({10000, dim}), idx = b.tensor({10240}, DType::kInt64);
    const auto off = b.tensor({512}, DType::kInt64), out = b.tensor({512, dim});
    b.op("aten::embedding_bag(Tensor weight, Tensor indices, Tensor offsets, ...) -> (Tensor, Tensor, Tensor, Tensor)",
         {w, idx, off}, {out});
    return b.finish();
  };
  const double c = 4e-3;  // sqrt(2 x 8 ns): 10,000 rows lie halfway between in log rows
  const OpModel model(profile(0.8), "uniform");
  for (const auto& [dim, want] : {std::pair<int64_t, double>{128, 5 + c * std::pow(2.0, 0.8) * 10240},
                                  {8, 5 + c * std::pow(0.125, 0.8) * 10240},
                                  {32, 5 + c * std::pow(0.5, 0.8) * 10240}}) {
    const trace::Trace t = lookup(dim);
    EXPECT_NEAR(model.estimate(t, t.nodes[2], 0).us, want, 1e-6 * want) << dim;
  }
  const trace::Trace wide = lookup(128);
  const double held = 5 + 4e-3 * 2 * 10240;
  EXPECT_NEAR(OpModel(profile(1.5), "uniform").estimate(wide, wide.nodes[2], 0).us, held, 1e-6 * held);
}

}  // namespace
// A GPU profile (one with launch times) gives the dense backward a power law
// in the lookups through each table's measured calls, not the CPU mechanism:
// points (256, 60), (8192, 180) give us = 60 (n / 256)^(ln 3 / ln 32), so
// 10240 lookups take 60 * 40^0.317 = 193.2. Catches the CPU mechanism (fill
// + sort + per lookup, fitted to the same points) used on a GPU, or a line
// through the points (211.0).
TEST(EmbeddingModel, OnAGpuTheDenseBackwardIsAPowerLawInTheLookups) {
  DenseBackward d;
  d.hw.embedding.clear();
  for (const char* dist : {"uniform", "zipf:1.1"}) {
    d.hw.embedding.push_back({100000, 64, 256, 1, dist, 5, 60, 0});
    d.hw.embedding.push_back({100000, 64, 256, 32, dist, 9, 180, 0});
  }
  d.hw.launch_us = {{"aten::_embedding_bag_backward", 20}};
  const double expected = 60 * std::pow(10240.0 / 256, std::log(3.0) / std::log(32.0));
  EXPECT_NEAR(d.estimate("uniform").us, expected, 1e-6);
  d.hw.launch_us.clear();  // the same points on a CPU: the mechanism
  EXPECT_GT(std::fabs(d.estimate("uniform").us - expected), 5);
}

}  // namespace etb::predict
