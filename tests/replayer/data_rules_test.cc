// SPDX-License-Identifier: MIT
//
// What the trace does not record about values (replayer/data_rules.h), one
// test per case the zoo models met: each trace below replays with faults or
// wrong shapes/dtypes when its rule is taken away. The expected shapes and
// dtypes are the recorded ones the verify pass compares against.
#include <gtest/gtest.h>

#include "replayer/replayer.h"
#include "tests/replayer/replay_helpers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {
using trace::DType;

constexpr const char* kMul = "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor";
constexpr const char* kIndexSelect =
    "aten::index_select(Tensor self, int dim, Tensor index) -> Tensor";
constexpr const char* kNonzero = "aten::nonzero(Tensor self) -> Tensor";

struct Replayed {
  ReplayResult result;
  ReplayDiagnostics diag;
};

Replayed replay(const trace::Trace& t, const ReplayOptions& o = test::quickOptions()) {
  Replayed run;
  run.result = test::replayLocal(t, o, &run.diag);
  return run;
}

// A [50, 4] sparse gradient as torch 1.13 records one (no storage: storage
// id 0, itemsize 0, device "") and its aten::coalesce; returns the
// coalesced output.
trace::Value coalescedSparseGrad(test::TraceBuilder& b) {
  trace::Trace& t = b.trace();
  trace::TensorRef r;
  r.tensor_id = 1000;
  r.dtype = DType::kFloat;
  r.has_device = true;
  r.device = t.strings.intern("");
  r.shape = t.lists.intern({50, 4});
  const trace::Value grad = trace::makeTensor(t, r, "Tensor(float)");
  r.tensor_id = 1001;
  const trace::Value coalesced = trace::makeTensor(t, r, "Tensor(float)");
  b.op("aten::coalesce(Tensor(a) self) -> Tensor(a)", {grad}, {coalesced});
  return coalesced;
}

std::string why(const Replayed& r) {
  const Coverage& c = r.result.coverage;
  if (!c.skipped_ops.empty()) return "skipped: " + c.skipped_ops[0].reason;
  if (!r.diag.output_mismatches.empty()) return "mismatch: " + r.diag.output_mismatches[0];
  return "";
}

// 0.1 * loss in Python: the 0.1 reaches aten::mul.Tensor as a 0-dim double
// tensor that does not promote the float result. As an ordinary 0-dim
// tensor it would make the product (and everything after it) double.
TEST(DataRules, WrappedPythonNumberDoesNotPromoteTheResult) {
  test::TraceBuilder b;
  const auto loss = b.tensor({}), scale = b.tensor({}, DType::kDouble);
  const auto y = b.tensor({}), z = b.tensor({});
  b.op(kMul, {loss, scale}, {y});
  b.op(kMul, {y, loss}, {z});  // the double would spread to what reads it
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  EXPECT_EQ(r.diag.outputs_checked, 2u);
  EXPECT_TRUE(r.diag.output_mismatches.empty()) << why(r);
}

// A 0-dim double leaf whose op's output is double too is an ordinary
// tensor: it keeps promoting (double * float 0-dim -> double).
TEST(DataRules, ZeroDimDoubleThatPromotesStaysATensor) {
  test::TraceBuilder b;
  const auto x = b.tensor({}), d = b.tensor({}, DType::kDouble), y = b.tensor({}, DType::kDouble);
  b.op(kMul, {x, d}, {y});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 1u) << why(r);
  EXPECT_TRUE(r.diag.output_mismatches.empty()) << why(r);
}

// A sparse gradient (torch 1.13 records it with no storage: storage id 0,
// itemsize 0, device "") replays as a sparse COO leaf; dense, every sparse
// op on it fails with "Could not run 'aten::_values' ... 'CPU' backend".
TEST(DataRules, StoragelessTensorReplaysAsSparseLeaf) {
  test::TraceBuilder b;
  const trace::Value coalesced = coalescedSparseGrad(b);
  b.op("aten::_values(Tensor(a) self) -> Tensor(a)", {coalesced}, {});
  b.op("aten::sparse_mask(Tensor self, Tensor mask) -> Tensor", {b.tensor({50, 4}), coalesced}, {});
  const Replayed run = replay(b.finish());
  EXPECT_EQ(run.result.coverage.replayed, 3u) << why(run);
  EXPECT_TRUE(run.diag.output_mismatches.empty()) << why(run);
}

// SparseAdam coalesces the embedding's sparse gradient: how many rows it
// keeps depends on the ids, which the trace does not record, and the
// _indices / _values read off it (and the dense optimizer state updated
// through them) have the recorded row count. Found in wild2_sparse (26
// recorded, 32 replayed). The leaf has about 32 distinct rows of 50: the
// coalesce is pinned down to 7 and up to 45.
TEST(DataRules, CoalescedSparseKeepsTheRecordedElementCount) {
  for (const int64_t k : {7, 45}) {
    test::TraceBuilder b;
    const trace::Value coalesced = coalescedSparseGrad(b);
    const auto values = b.tensor({k, 4});
    b.op("aten::_indices(Tensor(a) self) -> Tensor(a)", {coalesced},
         {b.tensor({1, k}, DType::kInt64)});
    b.op("aten::_values(Tensor(a) self) -> Tensor(a)", {coalesced}, {values});
    b.op(kMul, {values, b.tensor({k, 4})}, {b.tensor({k, 4})});
    const Replayed run = replay(b.finish());
    EXPECT_EQ(run.result.coverage.replayed, 4u) << k << ": " << why(run);
    EXPECT_EQ(run.diag.outputs_checked, 4u) << k;
    EXPECT_TRUE(run.diag.output_mismatches.empty()) << k << ": " << why(run);
    EXPECT_EQ(run.result.coverage.adapted, 1u) << k;  // the coalesce, listed
  }
}

// pack_padded_sequence(x, lengths) after lengths.sort(descending): the
// lengths leaf is reached through the sort, drawn in [1, T] and such that
// the packed data ([sum, F]) and batch_sizes ([max]) have the recorded
// sizes. Drawn as other int64 leaves ([0, 4)), the op faults on a 0.
TEST(DataRules, PackedSequenceLengthsGiveTheRecordedShapes) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto lengths = b.tensor({5}, DType::kInt64);
  const auto sorted = b.tensor({5}, DType::kInt64), order = b.tensor({5}, DType::kInt64);
  b.op("aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
       {lengths, trace::makeInt(t, -1), trace::makeBool(t, true)}, {sorted, order});
  const auto x = b.tensor({5, 7, 3});
  b.op("aten::_pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first) -> (Tensor, Tensor)",
       {x, sorted, trace::makeBool(t, true)}, {b.tensor({23, 3}), b.tensor({6}, DType::kInt64)});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  EXPECT_EQ(r.diag.outputs_checked, 4u);
  EXPECT_TRUE(r.diag.output_mismatches.empty()) << why(r);
  EXPECT_EQ(r.result.coverage.adapted, 0u);  // drawn right, not pinned
}

// An index leaf that reaches index_select through a sort is narrowed to the
// table (64 draws in [0, 4) would hit rows 2 and 3 of a 2-row table).
TEST(DataRules, IndexRangeReachesTheLeafThroughValuePreservingOps) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto idx = b.tensor({64}, DType::kInt64), sorted = b.tensor({64}, DType::kInt64);
  const auto view = b.tensor({8, 8}, DType::kInt64), flat = b.tensor({64}, DType::kInt64);
  b.op("aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
       {idx, trace::makeInt(t, -1), trace::makeBool(t, false)}, {sorted, b.tensor({64}, DType::kInt64)});
  b.op("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", {sorted, test::intList(t, {8, 8})}, {view});
  b.op("aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", {view, test::intList(t, {64})}, {flat});
  b.op(kIndexSelect, {b.tensor({2, 3}), trace::makeInt(t, 0), flat}, {b.tensor({64, 3})});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 4u) << why(r);
  EXPECT_EQ(r.result.coverage.adapted, 0u) << r.result.coverage.adapted_ops[0].reason;
}

// nonzero of random data finds a count other than the recorded 3: its
// output is pinned to [3, 1] (listed as adapted), so index_select, and the
// recorded gradient that must match its output, keep the recorded sizes.
TEST(DataRules, DataDependentShapeIsPinnedAndListed) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto flags = b.tensor({16}), nz = b.tensor({3, 1}, DType::kInt64);
  const auto idx = b.tensor({3}, DType::kInt64), picked = b.tensor({3});
  b.op(kNonzero, {flags}, {nz});
  b.op("aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", {nz, trace::makeInt(t, 1)}, {idx});
  b.op(kIndexSelect, {flags, trace::makeInt(t, 0), idx}, {picked});
  b.op("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       {picked, b.tensor({3}), trace::makeInt(t, 1)}, {b.tensor({3})});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 4u) << why(r);
  EXPECT_TRUE(r.diag.output_mismatches.empty()) << why(r);
  ASSERT_EQ(r.result.coverage.adapted, 1u);
  EXPECT_EQ(r.result.coverage.adapted_ops[0].name, "aten::nonzero");
  EXPECT_NE(r.result.coverage.adapted_ops[0].reason.find("[16, 1] pinned to the recorded [3, 1]"),
            std::string::npos) << r.result.coverage.adapted_ops[0].reason;
}

// idx * capacity with capacity a Python int: the trace keeps the 0-dim
// tensor, not its value 40, so the replayed index points anywhere. After
// the first out-of-range fault the op's index is clamped into the table.
TEST(DataRules, IndexFromAnUnrecordedScalarIsClampedAfterItFaults) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto idx = b.tensor({32}, DType::kInt64), far = b.tensor({32}, DType::kInt64);
  b.op("aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
       {idx, trace::makeInt(t, 1000), trace::makeInt(t, 1)}, {far});
  b.op("aten::index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
       {b.tensor({8, 2}), trace::makeInt(t, 0), far, b.tensor({32, 2}), trace::makeInt(t, 1)},
       {b.tensor({8, 2})});
  const Replayed r = replay(b.finish(), test::replayOptions(1, 3, test::Verify::kOutputs));
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  ASSERT_EQ(r.result.coverage.adapted, 1u);  // listed once over 4 iterations
  EXPECT_EQ(r.result.coverage.adapted_ops[0].name, "aten::index_add");
  EXPECT_NE(r.result.coverage.adapted_ops[0].reason.find("index out of range"), std::string::npos)
      << r.result.coverage.adapted_ops[0].reason;
}

// logits[mask] backward: index_put_ of the recorded [2, 3] gradient through
// a mask that selects all 6 rows in the replay (x >= 0 on [0, 1) data). The
// mask is given the recorded 2 elements; without that, a shape fault.
TEST(DataRules, BooleanMaskTakesTheRecordedCountForIndexPut) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({6}), mask = b.tensor({6}, DType::kBool);
  b.op("aten::ge.Scalar(Tensor self, Scalar other) -> Tensor", {x, trace::makeDouble(t, 0.0)}, {mask});
  trace::Value indices;
  indices.kind = trace::ValueKind::kList;
  indices.items = {mask};
  const auto self = b.tensor({6, 3});
  b.op("aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
       {self, indices, b.tensor({2, 3}), trace::makeBool(t, true)}, {self});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  ASSERT_EQ(r.result.coverage.adapted, 1u);
  EXPECT_NE(r.result.coverage.adapted_ops[0].reason.find("recorded 2 elements"), std::string::npos)
      << r.result.coverage.adapted_ops[0].reason;
}

// linear under torch.autocast("cpu", bfloat16): float inputs, a bfloat16
// output, and inside it the same op again on bfloat16 copies. Replayed
// without autocast it computes float32, and hands float32 on (the ReLU).
TEST(DataRules, OpRecordedUnderAutocastRunsUnderIt) {
  test::TraceBuilder b;
  const auto x = b.tensor({4, 8}), w = b.tensor({3, 8}), bias = b.tensor({3});
  const auto y = b.tensor({4, 3}, DType::kBFloat16);
  constexpr const char* kLinear =
      "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor";
  const trace::NodeId outer = b.op(kLinear, {x, w, bias}, {y});
  b.op(kLinear, {b.tensor({4, 8}, DType::kBFloat16), b.tensor({3, 8}, DType::kBFloat16),
                 b.tensor({3}, DType::kBFloat16)}, {y});
  b.trace().nodes.back().parent = outer;  // the redispatched call inside it
  b.op("aten::relu(Tensor self) -> Tensor", {y}, {b.tensor({4, 3}, DType::kBFloat16)});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.operators, 2u);  // the inner linear is the outer's internals
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  EXPECT_EQ(r.diag.outputs_checked, 2u);
  EXPECT_TRUE(r.diag.output_mismatches.empty()) << why(r);
}

// A per-channel fake-quant observer (QAT): running_min above running_max in
// any of 32 channels makes choosing quantization parameters fault; the
// observer's running_min is drawn in [-1, 0) and running_max in [0, 1).
TEST(DataRules, ObserverRunningMinStaysBelowRunningMax) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto on = b.tensor({1}, DType::kInt64);
  b.op("aten::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
       {on, trace::makeInt(t, 1)}, {on});  // observer and fake-quant on, as in QAT
  b.op("aten::fused_moving_avg_obs_fake_quant(Tensor self, Tensor observer_on, Tensor "
       "fake_quant_on, Tensor(a!) running_min, Tensor(b!) running_max, Tensor(c!) scale, "
       "Tensor(d!) zero_point, float averaging_const, int quant_min, int quant_max, int ch_axis, "
       "bool per_row_fake_quant=False, bool symmetric_quant=False) -> Tensor",
       {b.tensor({32, 4}), on, on, b.tensor({32}), b.tensor({32}), b.tensor({32}),
        b.tensor({32}, DType::kInt32), trace::makeDouble(t, 0.01), trace::makeInt(t, -128),
        trace::makeInt(t, 127), trace::makeInt(t, 0), trace::makeBool(t, true),
        trace::makeBool(t, true)},
       {b.tensor({32, 4})});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
}

// scatter_reduce's index, like gather's, is clamped into self after a fault.
TEST(DataRules, ScatterReduceIndexIsClampedAfterItFaults) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto idx = b.tensor({4, 6}, DType::kInt64), far = b.tensor({4, 6}, DType::kInt64);
  b.op("aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
       {idx, trace::makeInt(t, 50), trace::makeInt(t, 1)}, {far});
  b.op("aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, "
       "bool include_self=True) -> Tensor",
       {b.tensor({4, 18}), trace::makeInt(t, 1), far, b.tensor({4, 6}), trace::makeString(t, "amax"),
        trace::makeBool(t, false)},
       {b.tensor({4, 18})});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  ASSERT_EQ(r.result.coverage.adapted, 1u);
  EXPECT_EQ(r.result.coverage.adapted_ops[0].name, "aten::scatter_reduce");
}

// masked_scatter(self, mask, source): a replayed mask with more elements
// set (6, x >= 0) than the recorded source has (2) faults; it takes 2.
TEST(DataRules, MaskedScatterMaskTakesTheSourcesCount) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({6}), mask = b.tensor({6}, DType::kBool);
  b.op("aten::ge.Scalar(Tensor self, Scalar other) -> Tensor", {x, trace::makeDouble(t, 0.0)}, {mask});
  b.op("aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
       {b.tensor({6}), mask, b.tensor({2})}, {b.tensor({6})});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  ASSERT_EQ(r.result.coverage.adapted, 1u);
  EXPECT_NE(r.result.coverage.adapted_ops[0].reason.find("recorded 2 elements"), std::string::npos)
      << r.result.coverage.adapted_ops[0].reason;
}

// masked_select's backward (grad, input, mask) scatters the gradient into
// the mask's set elements: a replayed mask (x >= 0: 6 of 6) with more of
// them than the recorded gradient has (2) faulted ("Number of elements of
// source < number of ones in mask") and the op was skipped (wild3_dyn).
// The mask is its third argument, not the second.
TEST(DataRules, MaskedSelectBackwardMaskTakesTheGradientsCount) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({6}), mask = b.tensor({6}, DType::kBool);
  b.op("aten::ge.Scalar(Tensor self, Scalar other) -> Tensor", {x, trace::makeDouble(t, 0.0)}, {mask});
  b.op("aten::masked_select_backward(Tensor grad, Tensor input, Tensor mask) -> Tensor",
       {b.tensor({2}), b.tensor({6}), mask}, {b.tensor({6})});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  EXPECT_TRUE(r.diag.output_mismatches.empty()) << why(r);
  ASSERT_EQ(r.result.coverage.adapted, 1u);
  EXPECT_NE(r.result.coverage.adapted_ops[0].reason.find("recorded 2 elements"), std::string::npos)
      << r.result.coverage.adapted_ops[0].reason;
}

// torch.where(cond) is nonzero by another name (a list of index tensors);
// where.self, with the same op name, has a fixed shape and is left alone.
TEST(DataRules, WhereOfAConditionIsDataDependent) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto cond = b.tensor({16}, DType::kBool);
  trace::Value rows;
  rows.kind = trace::ValueKind::kList;
  rows.items = {b.tensor({3}, DType::kInt64)};
  const trace::NodeId where = b.op("aten::where(Tensor condition) -> Tensor[]", {cond}, {rows});
  b.op("aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor",
       {cond, b.tensor({16}), trace::makeDouble(t, 0.0)}, {b.tensor({16})});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 2u) << why(r);
  EXPECT_TRUE(r.diag.output_mismatches.empty()) << why(r);
  ASSERT_EQ(r.result.coverage.adapted, 1u);
  EXPECT_EQ(r.result.coverage.adapted_ops[0].node_id, where);
}

}  // namespace
}  // namespace etb::replay

namespace etb::replay {
namespace {
// linalg.solve's backward (wild_losses) calls linalg_lu_solve with the LU and
// pivots its forward saved; as leaves, random int32 pivots fail the kernel's
// check ("Pivots given to lu_solve must all be greater or equal to 1") and
// the op was skipped. Pivots are 1-based rows of the LU: drawn in [1, n].
TEST(DataRules, LuPivotsAreValidRowNumbers) {
  test::TraceBuilder b;
  const auto lu = b.tensor({5, 5}), pivots = b.tensor({5}, DType::kInt32), rhs = b.tensor({5, 3});
  const auto x = b.tensor({5, 3});
  b.trace().tensors[x.tensor].has_strides = false;  // LAPACK's column-major result
  b.op("aten::linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, "
       "bool adjoint=False) -> Tensor",
       {lu, pivots, rhs, trace::makeBool(b.trace(), true), trace::makeBool(b.trace(), false)},
       {x});
  const Replayed r = replay(b.finish());
  EXPECT_EQ(r.result.coverage.replayed, 1u) << why(r);
  EXPECT_TRUE(r.diag.output_mismatches.empty()) << why(r);
}
}  // namespace
}  // namespace etb::replay
