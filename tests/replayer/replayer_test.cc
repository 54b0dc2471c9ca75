// SPDX-License-Identifier: MIT
#include "replayer/replayer.h"

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {
using trace::DType;

ReplayOptions quickOptions() {
  ReplayOptions o;
  o.device = "cpu";
  o.warmup = 1;
  o.iters = 2;
  o.verify_outputs = true;
  return o;
}

ReplayResult replay(const trace::Trace& t, ReplayDiagnostics* diag, ReplayOptions o = quickOptions()) {
  auto comm = makeLocalCommunicator();
  return replayTrace(t, o, *comm, diag);
}

TEST(Replayer, RunsResolvedOpsAndMatchesRecordedOutputs) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({4, 8}), w = b.tensor({8, 3}), y = b.tensor({4, 3});
  const auto z = b.tensor({4, 3});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {x, w}, {y});
  b.op("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       {y, y, trace::makeInt(t, 1)}, {z});
  b.op("aten::relu_(Tensor(a!) self) -> Tensor(a!)", {z}, {z});
  ReplayDiagnostics diag;
  const ReplayResult r = replay(b.finish(), &diag);
  EXPECT_EQ(r.coverage.operators, 3u);
  EXPECT_EQ(r.coverage.replayed, 3u);
  EXPECT_TRUE(diag.output_mismatches.empty()) << diag.output_mismatches[0];
  EXPECT_EQ(diag.outputs_checked, 3u);
  ASSERT_EQ(r.ops.size(), 3u);
  EXPECT_EQ(r.ops[1].overload, "Tensor");
  EXPECT_EQ(r.replay_iter_ms.samples.size(), 2u);
  EXPECT_GT(r.system.peak_tensor_bytes, 0u);
}

TEST(Replayer, ReportsWrongRecordedShapeAsMismatch) {
  test::TraceBuilder b;
  const auto x = b.tensor({4, 8}), w = b.tensor({8, 3}), y = b.tensor({4, 5});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {x, w}, {y});
  ReplayDiagnostics diag;
  replay(b.finish(), &diag);
  ASSERT_EQ(diag.output_mismatches.size(), 1u);
  EXPECT_NE(diag.output_mismatches[0].find("shape"), std::string::npos);
}

TEST(Replayer, SkipsUnknownOpAndSynthesisesItsOutput) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({2, 2}), y = b.tensor({2, 2}), z = b.tensor({2, 2});
  b.op("etb_test::no_such_op(Tensor self) -> Tensor", {x}, {y});
  b.op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {y, y}, {z});
  b.op("aten::mul.Scalar(Tensor self, Scalar other) -> Tensor", {z, makeString(t, "x")}, {z});
  ReplayDiagnostics diag;
  const ReplayResult r = replay(b.finish(), &diag);
  EXPECT_EQ(r.coverage.operators, 3u);
  EXPECT_EQ(r.coverage.replayed, 1u);
  ASSERT_EQ(r.coverage.skipped_ops.size(), 2u);
  EXPECT_EQ(r.coverage.skipped_ops[0].reason, "op not in this libtorch");
  EXPECT_EQ(r.coverage.skipped_by_reason.at("expected a Scalar"), 1u);
  EXPECT_TRUE(diag.output_mismatches.empty());
}

TEST(Replayer, EmbeddingIndicesStayInsideTheTable) {
  for (const std::string dist : {"uniform", "zipf:1.2"}) {
    test::TraceBuilder b;
    trace::Trace& t = b.trace();
    const auto table = b.tensor({7, 4}), idx = b.tensor({1000}, DType::kInt64);
    const auto out = b.tensor({1000, 4});
    b.op("aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, "
         "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
         {table, idx, trace::makeInt(t, -1), trace::makeBool(t, false), trace::makeBool(t, false)},
         {out});
    const auto w2 = b.tensor({5, 3}), idx2 = b.tensor({40}, DType::kInt64);
    const auto off = b.tensor({8}, DType::kInt64), out2 = b.tensor({8, 3});
    b.op("aten::embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, "
         "bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, "
         "bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)",
         {w2, idx2, off, makeBool(t, false), makeInt(t, 0), makeBool(t, false), makeNone(t),
          makeBool(t, false), makeNone(t)},
         {out2});
    ReplayOptions o = quickOptions();
    o.index_dist = dist;
    ReplayDiagnostics diag;
    const ReplayResult r = replay(b.finish(), &diag, o);
    EXPECT_EQ(r.coverage.replayed, 2u) << dist << ": "
        << (r.coverage.skipped_ops.empty() ? "" : r.coverage.skipped_ops[0].reason);
  }
}

TEST(Replayer, RejectsBadIndexDistribution) {
  EXPECT_THROW(parseIndexDist("zipf:"), InputError);
  EXPECT_THROW(parseIndexDist("normal"), InputError);
  EXPECT_DOUBLE_EQ(parseIndexDist("zipf:1.5"), 1.5);
}

}  // namespace
}  // namespace etb::replay
