// SPDX-License-Identifier: MIT
//
// --autograd record on a training step built in code: y = x @ W (forward),
// the backward's gW = xt @ y under an autograd::engine label, SGD's
// W.add_(gW) under an Optimizer.step label. Which op is forward, which leaf
// is a parameter, and that the optimizer's in-place update of a parameter
// that requires grad still runs (it does only under no_grad) are known from
// how the trace was built.
#include <gtest/gtest.h>

#include "replayer/replayer.h"
#include "tests/replayer/replay_helpers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {

constexpr const char* kMm = "aten::mm(Tensor self, Tensor mat2) -> Tensor";
constexpr const char* kAdd =
    "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)";
constexpr const char* kMul = "aten::mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)";

// forward_updates_w: W.mul_(2) in the forward (W is no parameter then);
// backward: the backward's op under its autograd::engine label.
trace::Trace trainingStep(bool forward_updates_w = false, bool backward = true) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const trace::Value x = b.tensor({4, 8}), w = b.tensor({8, 8}), xt = b.tensor({8, 4});
  const trace::Value y = b.tensor({4, 8}), gw = b.tensor({8, 8});
  if (forward_updates_w) b.op(kMul, {w, trace::makeDouble(t, 2.0)}, {w});
  b.op(kMm, {x, w}, {y});
  if (backward) {
    b.under(b.label("autograd::engine::evaluate_function: MmBackward0"));
    b.op(kMm, {xt, y}, {gw});
  } else {
    b.op(kMm, {xt, y}, {gw});
  }
  b.under(b.label("Optimizer.step#SGD.step"));
  b.op(kAdd, {w, gw, trace::makeDouble(t, -0.1)}, {w});
  return b.finish();
}

ReplayResult replay(const trace::Trace& t, bool record) {
  ReplayOptions o = test::replayOptions(1, 2, test::Verify::kNo);
  o.record_autograd = record;
  return test::replayLocal(t, o);
}

TEST(AutogradRecord, ForwardRecordsOverTheParameterTheOptimizerUpdates) {
  const ReplayResult r = replay(trainingStep(), true);
  EXPECT_EQ(r.coverage.autograd_forward_ops, 1);  // the forward mm; not the backward's
  EXPECT_EQ(r.coverage.autograd_parameters, 1u);  // W: x is read, never updated
  EXPECT_EQ(r.coverage.autograd_none, "");
  // The optimizer's W.add_ on a leaf that requires grad runs only under
  // no_grad: in grad mode it throws and would be counted skipped.
  EXPECT_EQ(r.coverage.operators, 3u);
  EXPECT_EQ(r.coverage.replayed, 3u);
  EXPECT_EQ(r.coverage.skipped, 0u);
}

TEST(AutogradRecord, OffByDefaultAndReportedAsOff) {
  const ReplayResult r = replay(trainingStep(), false);
  EXPECT_EQ(r.coverage.autograd_forward_ops, -1);
  EXPECT_EQ(r.coverage.replayed, 3u);
}

TEST(AutogradRecord, ALeafTheForwardUpdatesInPlaceIsNoParameter) {
  const ReplayResult r = replay(trainingStep(/*forward_updates_w=*/true), true);
  EXPECT_EQ(r.coverage.autograd_parameters, 0u);
  EXPECT_EQ(r.coverage.autograd_forward_ops, 0);
  EXPECT_NE(r.coverage.autograd_none.find("no parameter"), std::string::npos);
  EXPECT_EQ(r.coverage.skipped, 0u);
}

TEST(AutogradRecord, NoBackwardNothingRecorded) {
  const ReplayResult r = replay(trainingStep(false, /*backward=*/false), true);
  EXPECT_EQ(r.coverage.autograd_parameters, 0u);
  EXPECT_NE(r.coverage.autograd_none.find("no backward"), std::string::npos);
}

}  // namespace
}  // namespace etb::replay
