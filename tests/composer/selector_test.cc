// SPDX-License-Identifier: MIT
// Selection on the fleet samples. Expected counts come from the models
// (fleet_samples/README.md, models.py), not from the selector.
#include "composer/selector.h"

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "tests/composer/compose_fixture.h"

namespace etb::compose {
namespace {
using test::fleetSample;
using test::topLevelOps;

trace::Trace select(const std::string& sample, std::vector<std::string> texts) {
  std::vector<Selector> sel;
  for (const auto& t : texts) sel.push_back(parseSelector(t));
  return selectNodes(fleetSample(sample), sel);
}

// The mlp has 5 Linear layers and 4 ReLUs (README: 4 x (Linear + ReLU) + Linear).
TEST(Selector, OpRegexKeepsEveryMatchingTopLevelOp) {
  const trace::Trace t = select("mlp", {"op:aten::(linear|relu)"});
  const auto ops = topLevelOps(t);
  EXPECT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops.at("aten::linear"), 5u);
  EXPECT_EQ(ops.at("aten::relu"), 4u);
  // The linear's children (t, addmm) come along: they run inside it.
  size_t addmm = 0;
  for (const trace::Node& n : t.nodes) addmm += t.name(n) == "aten::addmm" ? 1 : 0;
  EXPECT_EQ(addmm, 5u);
  ASSERT_EQ(t.iterations.size(), 1u) << "the ProfilerStep marker must survive";
}

TEST(Selector, PhasesSplitTheIteration) {
  const auto fwd = topLevelOps(select("mlp", {"phase:forward"}));
  const auto bwd = topLevelOps(select("mlp", {"phase:backward"}));
  const auto opt = topLevelOps(select("mlp", {"phase:optimizer"}));
  EXPECT_EQ(fwd.at("aten::linear"), 5u);
  EXPECT_EQ(bwd.count("aten::linear"), 0u);
  EXPECT_EQ(fwd.count("aten::threshold_backward"), 0u);
  EXPECT_EQ(bwd.at("aten::threshold_backward"), 4u);  // one per ReLU
  // SGD momentum: one mul_ per parameter (10 = 5 weights + 5 biases).
  EXPECT_EQ(opt.at("aten::mul_"), 10u);
  EXPECT_EQ(fwd.count("aten::mul_") + bwd.count("aten::mul_"), 0u);
  // Together they are the whole iteration.
  const auto all = topLevelOps(fleetSample("mlp"));
  for (const auto& [name, n] : all) {
    const uint64_t sum = (fwd.count(name) ? fwd.at(name) : 0) + (bwd.count(name) ? bwd.at(name) : 0) +
                         (opt.count(name) ? opt.at(name) : 0);
    EXPECT_EQ(sum, n) << name;
  }
}

TEST(Selector, ScopeSelectsALabelledSubtree) {
  // Every AddmmBackward0 of the mlp (one per Linear).
  const auto ops = topLevelOps(select("mlp", {"scope:AddmmBackward0"}));
  uint64_t total = 0;
  for (const auto& [name, n] : ops) total += n;
  EXPECT_GT(total, 0u);
  EXPECT_EQ(ops.count("aten::linear"), 0u);
}

TEST(Selector, IterationStepAndIdsIntersect) {
  EXPECT_EQ(topLevelOps(select("mlp", {"step:13"})), topLevelOps(fleetSample("mlp")));
  EXPECT_EQ(topLevelOps(select("mlp", {"iter:0"})), topLevelOps(fleetSample("mlp")));
  // ids 60-78: the first Linear (60) and its ReLU (72), see the ET.
  const auto layer = topLevelOps(select("mlp", {"ids:60-78"}));
  EXPECT_EQ(layer, (std::map<std::string, uint64_t>{{"aten::linear", 1}, {"aten::relu", 1}}));
  const auto both = topLevelOps(select("mlp", {"ids:60-78", "op:aten::relu"}));
  EXPECT_EQ(both, (std::map<std::string, uint64_t>{{"aten::relu", 1}}));
}

// ddp2 has 2 gradient buckets, each one c10d::allreduce_ (README).
TEST(Selector, ComputeAndCommOnDdp) {
  const trace::Trace comm = select("ddp2", {"comm"});
  const auto comm_ops = topLevelOps(comm);
  EXPECT_EQ(comm_ops, (std::map<std::string, uint64_t>{{"c10d::allreduce_", 2}}));
  const trace::Trace compute = select("ddp2", {"compute"});
  for (const trace::Node& n : compute.nodes) {
    EXPECT_LT(n.comm, 0) << "node " << n.id << " " << compute.name(n);
  }
  EXPECT_GT(topLevelOps(compute).at("aten::linear"), 0u);
}

TEST(Selector, BadSelectorsAreInputErrors) {
  EXPECT_THROW(parseSelector("opp:aten::mm"), InputError);
  EXPECT_THROW(parseSelector("phase:sideways"), InputError);
  EXPECT_THROW(parseSelector("ids:9-3"), InputError);
  EXPECT_THROW(parseSelector("op:("), InputError);
  try {
    select("mlp", {"op:aten::conv2d"});
    FAIL() << "an empty selection must be rejected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("empty selection"), std::string::npos) << e.what();
  }
  EXPECT_THROW(select("mlp", {"step:12"}), InputError);
}

}  // namespace
}  // namespace etb::compose
