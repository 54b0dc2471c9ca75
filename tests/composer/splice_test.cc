// SPDX-License-Identifier: MIT
// Repeat, concat and interleave on the fleet samples.
#include "composer/splice.h"

#include <gtest/gtest.h>

#include <set>

#include "composer/selector.h"
#include "composer/shape_check.h"
#include "core/base/error.h"
#include "tests/composer/compose_fixture.h"
#include "tests/replayer/trace_builder.h"

namespace etb::compose {
namespace {
using test::fleetSample;
using test::topLevelOps;

// The mlp's first Linear + ReLU (node ids 60 and 72 in the ET).
trace::Trace mlpLayer() {
  return selectNodes(fleetSample("mlp"), {parseSelector("ids:60-78")});
}

const trace::Node* nth(const trace::Trace& t, std::string_view name, size_t k) {
  for (const trace::Node& n : t.nodes) {
    if (t.name(n) == name && n.kind == trace::NodeKind::kOperator && k-- == 0) return &n;
  }
  return nullptr;
}

const trace::TensorRef& arg(const trace::Trace& t, const std::vector<trace::Value>& v, size_t i) {
  return t.tensors[v.at(i).tensor];
}

TEST(Repeat, CopiesChainThroughTheLayerOutput) {
  const trace::Trace layer = mlpLayer();
  RepeatStats stats;
  const trace::Trace r = repeatTrace(layer, 4, &stats);
  EXPECT_EQ(stats.copies, 3u);
  EXPECT_EQ(topLevelOps(r), (std::map<std::string, uint64_t>{{"aten::linear", 4}, {"aten::relu", 4}}));
  // Ids are fresh and consecutive; parents are earlier nodes.
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    EXPECT_EQ(r.nodes[i].id, i + 1);
    if (r.nodes[i].parent != 0 && r.nodes[i].parent != r.nodes[i].id) {
      EXPECT_NE(r.find(r.nodes[i].parent), nullptr) << "node " << r.nodes[i].id;
    }
  }
  std::set<uint64_t> weight_storages;
  for (size_t k = 0; k < 4; ++k) {
    const trace::Node* lin = nth(r, "aten::linear", k);
    const trace::Node* relu = nth(r, "aten::relu", k);
    ASSERT_TRUE(lin && relu);
    weight_storages.insert(arg(r, lin->inputs, 1).storage_id);
    if (k == 0) continue;
    // Copy k reads copy k-1's ReLU output, by identity.
    const trace::TensorRef& in = arg(r, lin->inputs, 0);
    const trace::TensorRef& prev = arg(r, nth(r, "aten::relu", k - 1)->outputs, 0);
    EXPECT_EQ(in.tensor_id, prev.tensor_id) << "copy " << k;
    EXPECT_EQ(in.storage_id, prev.storage_id) << "copy " << k;
  }
  EXPECT_EQ(weight_storages.size(), 4u) << "each copy has its own weight";
  EXPECT_EQ(r.iterations.size(), 1u);
  EXPECT_NO_THROW(checkShapes(r));
}

// A storageless (sparse) gradient read by coalesce and a dense tensor of the
// same shape and dtype produced last (SparseAdam beside a dense update, as
// in wild2_sparse): the next copy's coalesce is fed the sparse one, never the
// dense output, and the chained sparse ref keeps storage id 0 (shifted, it
// would read as dense and the replay's sparse ops fail on the CPU backend).
TEST(Repeat, SparseInputsChainOnlyToSparseOutputs) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  auto sparse = [&](uint64_t id) {
    trace::TensorRef r;
    r.tensor_id = id;
    r.dtype = trace::DType::kFloat;
    r.has_device = true;
    r.device = t.strings.intern("");
    r.shape = t.lists.intern({50, 4});
    return trace::makeTensor(t, r, "Tensor(float)");
  };
  const trace::Value grad = sparse(5000), coalesced = sparse(5001);
  b.op("aten::coalesce(Tensor(a) self) -> Tensor(a)", {grad}, {coalesced});
  const auto w = b.tensor({50, 4}), w2 = b.tensor({50, 4});
  b.op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {w, w}, {w2});
  const trace::Trace r = repeatTrace(b.finish(), 2);
  const trace::Node* second = nth(r, "aten::coalesce", 1);
  ASSERT_NE(second, nullptr);
  const trace::TensorRef& in = arg(r, second->inputs, 0);
  EXPECT_EQ(in.storage_id, 0u) << "copy 2's coalesce reads a dense tensor";
  EXPECT_EQ(in.tensor_id, arg(r, nth(r, "aten::coalesce", 0)->outputs, 0).tensor_id)
      << "copy 2 chains to copy 1's coalesced gradient";
  EXPECT_EQ(arg(r, nth(r, "aten::mul", 1)->inputs, 0).tensor_id,
            arg(r, nth(r, "aten::mul", 0)->outputs, 0).tensor_id);
}

// torch 1.13's observer gives a freed tensor's id to the next tensor at its
// address: here an int64 input (chained to the int64 result of the copy
// before) and, later in the step, a float mm output share one identity. The
// next copy's mm output is its own float tensor, not the previous copy's
// int64 result (a fresh zoo_qat recording was refused by the shape check so:
// "output 0 has dtype Float but the trace claims int64").
TEST(Repeat, AnIdReusedForANewTensorEndsItsChain) {
  test::TraceBuilder b;
  const auto idx = b.tensor({16, 32}, trace::DType::kInt64), neg = b.tensor({16, 32}, trace::DType::kInt64);
  const auto x = b.tensor({16, 32}), w = b.tensor({32, 32});
  b.op("aten::neg(Tensor self) -> Tensor", {idx}, {neg});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {x, w}, {idx});
  trace::Trace& t = b.trace();
  t.nodes.back().outputs[0] = trace::makeTensor(t, [&] {
    trace::TensorRef r = t.tensors[idx.tensor];  // the same identity, float
    r.dtype = trace::DType::kFloat;
    r.itemsize = 4;
    return r;
  }(), "Tensor(float)");
  const trace::Trace r = repeatTrace(b.finish(), 2);
  const trace::Node* mm = nth(r, "aten::mm", 1);
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(arg(r, mm->outputs, 0).dtype, trace::DType::kFloat);
  EXPECT_NE(arg(r, mm->outputs, 0).tensor_id, arg(r, nth(r, "aten::neg", 0)->outputs, 0).tensor_id);
  // The chain itself stands: copy 2 reads copy 1's results.
  EXPECT_EQ(arg(r, nth(r, "aten::neg", 1)->inputs, 0).tensor_id,
            arg(r, nth(r, "aten::neg", 0)->outputs, 0).tensor_id);
  EXPECT_EQ(arg(r, mm->inputs, 0).tensor_id, arg(r, nth(r, "aten::mm", 0)->outputs, 0).tensor_id);
  EXPECT_NO_THROW(checkShapes(r));
}

TEST(Repeat, WholeIterationKeepsMarkersAndCopiesTimes) {
  trace::Trace t = fleetSample("transformer");
  for (size_t i = 0; i < t.nodes.size(); ++i) {  // give it recorded times
    t.nodes[i].start_us = static_cast<double>(i);
    t.nodes[i].dur_us = 1;
  }
  const trace::Trace r = repeatTrace(t, 3);
  const uint64_t once = test::topLevelCount(t);
  EXPECT_EQ(test::topLevelCount(r), 3 * once);
  ASSERT_EQ(r.iterations.size(), 1u);
  EXPECT_EQ(r.iterations[0].name, "ProfilerStep#13");
  // The last copy of the last node starts two body spans later.
  double last = 0;
  for (const trace::Node& n : r.nodes) last = std::max(last, n.start_us);
  EXPECT_GT(last, 2.0 * static_cast<double>(t.nodes.size()) - 20);
  EXPECT_THROW(repeatTrace(t, 0), InputError);
}

TEST(Concat, TwoSamplesRunOneAfterTheOther) {
  const trace::Trace a = mlpLayer();
  const trace::Trace b = selectNodes(fleetSample("resnet18"), {parseSelector("phase:forward")});
  const trace::Trace c = concatTraces(a, b);
  const auto ops = topLevelOps(c);
  EXPECT_EQ(ops.at("aten::linear"), 1u + topLevelOps(b).at("aten::linear"));
  EXPECT_EQ(ops.at("aten::conv2d"), topLevelOps(b).at("aten::conv2d"));
  EXPECT_EQ(c.iterations.size(), 2u);
  // No tensor of b's part aliases one of a's.
  std::set<uint64_t> a_ids;
  for (const auto& r : a.tensors) a_ids.insert(r.storage_id);
  const trace::Node* conv = nth(c, "aten::conv2d", 0);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(a_ids.count(arg(c, conv->inputs, 0).storage_id), 0u);
  EXPECT_NO_THROW(checkShapes(c));
}

TEST(Interleave, ComputeOfOneCommOfAnother) {
  const trace::Trace r = interleaveTraces(fleetSample("mlp"), fleetSample("ddp2"));
  const auto ops = topLevelOps(r);
  EXPECT_EQ(ops.at("c10d::allreduce_"), 2u);
  EXPECT_EQ(ops.at("aten::linear"), 5u);
  // Spread out: the two collectives are not adjacent, and not at the ends.
  std::vector<std::string> order;
  for (const trace::Node& n : r.nodes) {
    if (n.comm >= 0 || r.name(n) == "aten::linear") order.push_back(std::string(r.name(n)));
  }
  EXPECT_NE(order.front(), "c10d::allreduce_");
  EXPECT_EQ(r.process_groups.size(), 1u);
  EXPECT_THROW(interleaveTraces(fleetSample("mlp"), fleetSample("mlp")), InputError);
}

}  // namespace
}  // namespace etb::compose
