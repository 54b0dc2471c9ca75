// SPDX-License-Identifier: MIT
//
// Quantized Linear weights the trace records as an opaque "<Object>"
// (replayer/packed_params.h): torch.ao.quantization.quantize_dynamic's
// Linear layers (wild2_qdyn) were all skipped ("opaque value <Object>").
// The expected output shape is the recorded one the verify pass checks.
#include <gtest/gtest.h>

#include "replayer/replayer.h"
#include "tests/replayer/replay_helpers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {

constexpr const char* kLinearDynamic =
    "quantized::linear_dynamic(Tensor X, __torch__.torch.classes.quantized.LinearPackedParamsBase "
    "W_prepack, bool reduce_range=False) -> Tensor Y";

trace::Value opaque(trace::Trace& t) {
  trace::Value v;
  v.kind = trace::ValueKind::kOpaque;
  v.s = t.strings.intern("<Object>");
  v.type = t.strings.intern("Object");
  return v;
}

// One verified iteration: what is checked is that the op runs and its shape.
const ReplayOptions kOnce = test::replayOptions(0, 1, test::Verify::kOutputs);

// Two dynamic int8 Linear layers, 32 -> 48 -> 5: packed weights of the
// sizes the recorded input and output show; each listed as adapted.
TEST(PackedParams, DynamicInt8LinearRunsWithPackedStandIns) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({8, 32}), h = b.tensor({8, 48}), y = b.tensor({8, 5});
  b.op(kLinearDynamic, {x, opaque(t), trace::makeBool(t, true)}, {h});
  b.op(kLinearDynamic, {h, opaque(t), trace::makeBool(t, true)}, {y});
  ReplayDiagnostics diag;
  const ReplayResult r = test::replayLocal(b.finish(), kOnce, &diag);
  const Coverage& c = r.coverage;
  EXPECT_EQ(c.replayed, 2u) << (c.skipped_ops.empty() ? "" : c.skipped_ops[0].reason);
  EXPECT_EQ(diag.outputs_checked, 2u);
  EXPECT_TRUE(diag.output_mismatches.empty()) << diag.output_mismatches[0];
  ASSERT_EQ(c.adapted, 2u);
  EXPECT_NE(c.adapted_ops[0].reason.find("packed weights"), std::string::npos);
}

// Without a recorded output the weight's size is unknown: skipped, and
// the reason says so.
TEST(PackedParams, UnknownSizeIsSkippedWithTheReason) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  b.op(kLinearDynamic, {b.tensor({8, 32}), opaque(t), trace::makeBool(t, false)}, {});
  ReplayDiagnostics diag;
  const ReplayResult r = test::replayLocal(b.finish(), kOnce, &diag);
  ASSERT_EQ(r.coverage.skipped, 1u);
  EXPECT_NE(r.coverage.skipped_ops[0].reason.find("packed weights"), std::string::npos)
      << r.coverage.skipped_ops[0].reason;
}

}  // namespace
}  // namespace etb::replay
