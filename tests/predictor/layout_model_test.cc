// SPDX-License-Identifier: MIT
// The layout inference on hand-built traces whose layouts follow from
// ATen's rules (each case states the rule it checks); the live check on
// recorded networks against their tensors' strides is predict_cli_test.sh
// (layouts).
#include "predictor/layout_model.h"

#include <gtest/gtest.h>

#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::intList;
using test::TraceBuilder;

const char* kPermute = "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)";
const char* kMul = "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor";
const char* kConv =
    "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
    "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor";
const char* kContiguous =
    "aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)";

// As torch 1.13's ET records them (schema 1.0.1): shapes, no strides.
trace::Trace withoutStrides(TraceBuilder& b) {
  for (trace::TensorRef& r : b.trace().tensors) r.has_strides = false;
  return b.finish();
}

// The node index of the op with id `id` (TraceBuilder: root 1, thread 2).
size_t at(const trace::Trace& t, trace::NodeId id) {
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (t.nodes[i].id == id) return i;
  }
  ADD_FAILURE() << "no node " << id;
  return 0;
}

// ConvNeXt's block tail: an NHWC activation permuted back to [N, C, H, W]
// is channels-last; a broadcast layer scale times it is too (the [C, 1, 1]
// operand does not decide), and a conv of that reads it channels-last. The
// same permutes from a channels-last tensor give a contiguous NHWC one.
// Catches permute's dims read the wrong way round (the output would be
// [0, 3, 1, 2]-ordered, not channels-last), the first input deciding a
// broadcast, and the conv's input bit left unset.
TEST(LayoutModel, APermuteBackToNchwIsChannelsLastAndElementwiseOpsKeepIt) {
  TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto nhwc = b.tensor({2, 4, 4, 8}), nchw = b.tensor({2, 8, 4, 4});
  const auto scale = b.tensor({8, 1, 1}), scaled = b.tensor({2, 8, 4, 4});
  const auto w = b.tensor({8, 1, 3, 3}), y = b.tensor({2, 8, 4, 4}), back = b.tensor({2, 4, 4, 8});
  const trace::NodeId p = b.op(kPermute, {nhwc, intList(t, {0, 3, 1, 2})}, {nchw});
  const trace::NodeId m = b.op(kMul, {scale, nchw}, {scaled});
  const trace::NodeId c = b.op(kConv, {scaled, w, trace::makeNone(t)}, {y});
  const trace::NodeId q = b.op(kPermute, {y, intList(t, {0, 2, 3, 1})}, {back});
  const trace::NodeId m2 = b.op(kMul, {back, back}, {b.tensor({2, 4, 4, 8})});
  const trace::Trace tr = withoutStrides(b);
  const std::vector<uint32_t> bits = channelsLastInputs(tr);
  EXPECT_EQ(bits[at(tr, p)], 0u);        // a plain [N, H, W, C]
  EXPECT_EQ(bits[at(tr, m)], 1u << 1);   // the permuted one
  EXPECT_EQ(bits[at(tr, c)], 1u << 0);   // the conv's input
  EXPECT_EQ(bits[at(tr, q)], 1u << 0);   // the conv's output: its input was
  EXPECT_EQ(bits[at(tr, m2)], 0u);       // permuted to NHWC: contiguous
}

// An op's memory_format decides its output: channels-last (2), contiguous
// (0). A call inside another op changes nothing for the ops after (the
// replay calls the outer op: a conv's own resize_ of its output to
// channels-last, recorded because the original's leaves were, is not what
// the replay's contiguous leaves give). Catches the argument found at the
// wrong position (the keyword marker counted) and nested calls taken as
// the replay's.
TEST(LayoutModel, AMemoryFormatArgumentDecidesAndNestedCallsDoNot) {
  TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({2, 8, 4, 4}), xl = b.tensor({2, 8, 4, 4}), back = b.tensor({2, 8, 4, 4});
  const auto w = b.tensor({8, 8, 1, 1}), y = b.tensor({2, 8, 4, 4}), z = b.tensor({2, 8, 4, 4});
  const trace::NodeId to_cl = b.op(kContiguous, {x, trace::makeInt(t, 2)}, {xl});
  const trace::NodeId conv_cl = b.op(kConv, {xl, w, trace::makeNone(t)}, {y});
  const trace::NodeId to_plain = b.op(kContiguous, {y, trace::makeInt(t, 0)}, {back});
  const trace::NodeId conv = b.op(kConv, {back, w, trace::makeNone(t)}, {z});
  b.under(conv);
  b.op(kContiguous, {z, trace::makeInt(t, 2)}, {z});  // nested: no effect after
  b.under(2);
  const trace::NodeId after = b.op(kMul, {z, z}, {b.tensor({2, 8, 4, 4})});
  const trace::Trace tr = withoutStrides(b);
  const std::vector<uint32_t> bits = channelsLastInputs(tr);
  EXPECT_EQ(bits[at(tr, to_cl)], 0u);
  EXPECT_EQ(bits[at(tr, conv_cl)], 1u << 0);
  EXPECT_EQ(bits[at(tr, to_plain)], 1u << 0);
  EXPECT_EQ(bits[at(tr, conv)], 0u);
  EXPECT_EQ(bits[at(tr, after)], 0u);
}

// Recorded strides (ET 1.1.1+) say it themselves; a 1x1 map or a single
// channel is contiguous either way.
TEST(LayoutModel, StridesOfNhwcAreChannelsLastUnlessAlsoContiguous) {
  EXPECT_TRUE(isChannelsLast({2, 8, 4, 4}, {128, 1, 32, 8}));
  EXPECT_FALSE(isChannelsLast({2, 8, 4, 4}, {128, 16, 4, 1}));
  EXPECT_FALSE(isChannelsLast({2, 8, 1, 1}, {8, 1, 8, 8}));
  EXPECT_FALSE(isChannelsLast({2, 1, 4, 4}, {16, 1, 4, 1}));
  EXPECT_FALSE(isChannelsLast({8, 4, 4}, {1, 32, 8}));
}

}  // namespace
}  // namespace etb::predict
