// SPDX-License-Identifier: MIT
// predictIteration on built and recorded traces: one rank sums its ops; an
// op this libtorch lacks is skipped (as et_replay skips it); nothing of the
// trace runs while predicting.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "core/trace_io.h"
#include "predictor/aten_call_counter.h"
#include "predictor/predictor.h"
#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::TraceBuilder;

HwProfile smallProfile() {
  HwProfile hw;
  hw.dispatch_us = 1.0;
  hw.view_us = 0.5;
  hw.gemm = {{1, 64, 32, 128, 40.0}, {1, 8, 8, 8, 1.5}};
  hw.bandwidth["unary"] = {{1000, 2}, {4000, 4}};
  return hw;
}

TEST(AtenCallCounter, CountsTheOpsThatRunWhileAlive) {
  const at::Tensor a = at::ones({4});
  const AtenCallCounter counter;
  const at::Tensor b = at::relu(a);
  EXPECT_GE(counter.calls(), 1u);
}

TEST(Predictor, OneRankTakesTheSumOfItsOpsAndSkipsOpsThisLibtorchLacks) {
  TraceBuilder b;
  const auto a = b.tensor({64, 128}), w = b.tensor({128, 32}), y = b.tensor({64, 32});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {a, w}, {y});
  const auto r = b.tensor({500}), out = b.tensor({500});
  b.op("aten::relu(Tensor self) -> Tensor", {r}, {out});
  b.op("fbgemm::not_in_this_build(Tensor self) -> Tensor", {r}, {out});
  const trace::Trace t = b.finish();
  const Prediction p = predictIteration({&t}, smallProfile(), {});
  EXPECT_EQ(p.ops, 3u);
  EXPECT_EQ(p.skipped, 1u);
  EXPECT_NEAR(p.iter_ms, (40.0 + 4.0) / 1e3, 1e-9);  // mm (measured) + relu (curve)
  EXPECT_EQ(p.aten_calls, 0u);
}

TEST(Predictor, ARecordedSampleRunsNoAtenOpAndCoversEveryOp) {
  const trace::Trace t =
      trace::readTrace(std::string(ETB_SOURCE_DIR) + "/fleet_samples/resnet18/resnet18.et.json.gz");
  HwProfile hw = smallProfile();
  hw.conv = {{8, 64, 28, 28, 64, 3, 3, 1, 1, 100.0, 200.0}};
  const Prediction p = predictIteration({&t}, hw, {});
  EXPECT_EQ(p.aten_calls, 0u);
  EXPECT_GT(p.ops, 100u);
  EXPECT_EQ(p.skipped, 0u);
  EXPECT_GT(p.kinds.at("aten::convolution_backward").count, 0u);
  EXPECT_GT(p.iter_ms, 0);
}

}  // namespace
}  // namespace etb::predict
