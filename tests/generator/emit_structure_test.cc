// SPDX-License-Identifier: MIT
//
// The nodes a generated program keeps besides the replayed ones
// (generator/emit_structure.h), checked without building a program: the
// trace the program builds (replayed nodes plus kept nodes, each with its
// kept parent) must give host-time emulation the same gaps as the full trace
// (replayer/host_time.h, with fixed costs) and the replayer the same ops.
// Planted faults caught: a kept set without the marker (its thread), without
// the labels in the gaps, or with a kept op the replayer would then run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/kineto/kineto_linker.h"
#include "core/trace_io.h"
#include "generator/emit_structure.h"
#include "replayer/host_time.h"
#include "replayer/op_selection.h"
#include "tests/replayer/trace_builder.h"

namespace etb::gen {
namespace {

struct Sample {
  std::string trace, kineto;
};
void PrintTo(const Sample& s, std::ostream* os) { *os << s.trace; }

trace::Trace readLinked(const Sample& s) {
  const std::string dir = std::string(ETB_SOURCE_DIR) + "/fleet_samples/";
  trace::Trace t = trace::readTrace(dir + s.trace);
  trace::linkKineto(t, dir + s.kineto);
  return t;
}

// What the generated code builds: the replayed nodes whole, the kept ones
// with name, kind, thread and times only; parents as the structure says.
trace::Trace programTrace(const trace::Trace& t, const std::vector<replay::SelectedNode>& selected,
                          const TraceStructure& s) {
  trace::Trace p;
  p.path = t.path;
  p.strings = t.strings;
  p.lists = t.lists;
  p.tensors = t.tensors;
  p.comms = t.comms;
  p.iterations = t.iterations;
  std::vector<uint32_t> indices = s.kept;
  for (const replay::SelectedNode& n : selected) indices.push_back(n.index);
  std::sort(indices.begin(), indices.end());
  for (uint32_t i : indices) {
    trace::Node n;
    if (std::binary_search(s.kept.begin(), s.kept.end(), i)) {
      const trace::Node& k = t.nodes[i];
      n.id = k.id;
      n.name = k.name;
      n.kind = k.kind;
      n.tid = k.tid;
      n.start_us = k.start_us;
      n.dur_us = k.dur_us;
    } else {
      n = t.nodes[i];
    }
    auto parent = s.parent.find(i);
    n.parent = parent == s.parent.end() ? 0 : parent->second;
    p.nodes.push_back(std::move(n));
  }
  return p;
}

std::vector<uint64_t> ids(const trace::Trace& t, const std::vector<replay::SelectedNode>& sel) {
  std::vector<uint64_t> out;
  for (const replay::SelectedNode& s : sel) out.push_back(t.nodes[s.index].id);
  return out;
}

class StructureOnSample : public testing::TestWithParam<Sample> {};

TEST_P(StructureOnSample, ProgramTraceGivesTheSameGapsAndOps) {
  const trace::Trace t = readLinked(GetParam());
  const trace::Iteration it = replay::chooseIteration(t, 0);
  const std::vector<replay::SelectedNode> selected = replay::selectNodes(t, it);
  const TraceStructure s = traceStructure(t, it, selected);
  ASSERT_FALSE(s.kept.empty());
  EXPECT_EQ(s.left_out, 0u);
  const trace::Trace p = programTrace(t, selected, s);
  const std::vector<replay::SelectedNode> in_program = replay::selectNodes(p, it);
  ASSERT_EQ(ids(t, selected), ids(p, in_program));

  replay::ProfilerCost cost;  // fixed, so that only the trace's own figures matter
  cost.per_event_us = 5;
  cost.per_label_us = 3;
  cost.per_gap_us = 1;
  const replay::HostGaps want = replay::originalHostGaps(t, it, selected, cost);
  const replay::HostGaps got = replay::originalHostGaps(p, it, in_program, cost);
  EXPECT_GT(want.recorded_us, 0);
  EXPECT_GT(want.boundaries, 0u);
  EXPECT_DOUBLE_EQ(got.recorded_us, want.recorded_us);
  EXPECT_DOUBLE_EQ(got.emulated_us, want.emulated_us);
  EXPECT_EQ(got.boundaries, want.boundaries);
  EXPECT_EQ(got.label_boundaries, want.label_boundaries);
  EXPECT_EQ(got.stalls, want.stalls);
  EXPECT_EQ(got.untimed, want.untimed);
  EXPECT_EQ(got.before_us, want.before_us);
  EXPECT_DOUBLE_EQ(got.after_us, want.after_us);
  // Fewer nodes than the trace: the program does not carry every nested op.
  EXPECT_LT(p.nodes.size(), t.nodes.size());
}

INSTANTIATE_TEST_SUITE_P(
    FleetSamples, StructureOnSample,
    testing::Values(Sample{"mlp/mlp.et.json.gz", "mlp/mlp.kineto.json.gz"},
                    Sample{"conv_adamw/conv_adamw.et.json.gz", "conv_adamw/conv_adamw.kineto.json.gz"},
                    Sample{"ddp2/ddp2.rank0.et.json.gz", "ddp2/ddp2.rank0.kineto.json.gz"},
                    Sample{"lstm/lstm.et.json.gz", "lstm/lstm.kineto.json.gz"},
                    // Its backward ran on a second thread: gaps only on the marker's.
                    Sample{"gpu_h200/mlp/mlp.et.json.gz", "gpu_h200/mlp/mlp.kineto.json.gz"}),
    [](const testing::TestParamInfo<Sample>& info) {
      std::string name = info.param.trace.substr(0, info.param.trace.rfind('/'));
      std::replace(name.begin(), name.end(), '/', '_');
      return name;
    });

// torch 1.13 records gloo:send below c10d::send, and the label outlasts the
// op (the send completes after the call returns): the label is a host event
// outside every replayed span, and its ancestor, the replayed op, was kept
// as structure too; the generated program of a pipeline (wild3_pipe2) then
// failed at start-up: "node 113 added twice". Kept and replayed are disjoint.
TEST(Structure, AReplayedOpUnderAnOutlastingLabelIsNotKeptAgain) {
  test::TraceBuilder b;
  const trace::NodeId marker = b.label("ProfilerStep#1");
  b.under(marker);
  const auto x = b.tensor({4}), y = b.tensor({4}), z = b.tensor({4});
  const trace::NodeId send = b.op("aten::neg(Tensor self) -> Tensor", {x}, {y});
  const trace::NodeId late = b.label("gloo:send");
  const trace::NodeId after = b.op("aten::neg(Tensor self) -> Tensor", {y}, {z});
  for (trace::Node& n : b.trace().nodes) {
    if (n.id == late) n.parent = send;
  }
  trace::Trace t = b.finish();
  auto time = [&](trace::NodeId id, double start, double dur) {
    trace::Node& n = t.nodes[t.indexOf(id)];
    n.start_us = start, n.dur_us = dur;
  };
  time(marker, 0, 100), time(send, 10, 5), time(late, 12, 40), time(after, 60, 5);
  ASSERT_EQ(t.iterations.size(), 1u);
  t.iterations[0].start_us = 0, t.iterations[0].dur_us = 100;
  const trace::Iteration it = replay::chooseIteration(t, 0);
  const std::vector<replay::SelectedNode> selected = replay::selectNodes(t, it);
  ASSERT_EQ(selected.size(), 2u);
  const TraceStructure s = traceStructure(t, it, selected);
  EXPECT_NE(std::find(s.kept.begin(), s.kept.end(), t.indexOf(late)), s.kept.end());
  for (const replay::SelectedNode& n : selected) {
    EXPECT_EQ(std::find(s.kept.begin(), s.kept.end(), n.index), s.kept.end())
        << "replayed node " << t.nodes[n.index].id << " kept as structure too";
  }
}

// Without profiler times nothing is kept for host time, but the labels
// autograd recording reads still are.
TEST(Structure, KeepsPhaseLabelsWithoutProfilerTimes) {
  const trace::Trace t =
      trace::readTrace(std::string(ETB_SOURCE_DIR) + "/fleet_samples/mlp/mlp.et.json.gz");
  const trace::Iteration it = replay::chooseIteration(t, 0);
  const TraceStructure s = traceStructure(t, it, replay::selectNodes(t, it));
  EXPECT_EQ(s.host_events, 0u);
  bool backward = false, optimizer = false;
  for (uint32_t k : s.kept) {
    const std::string_view name = t.name(t.nodes[k]);
    backward = backward || name.rfind("autograd::engine::evaluate_function", 0) == 0;
    optimizer = optimizer || name.rfind("Optimizer.", 0) == 0;
  }
  EXPECT_TRUE(backward);
  EXPECT_TRUE(optimizer);
}

}  // namespace
}  // namespace etb::gen
