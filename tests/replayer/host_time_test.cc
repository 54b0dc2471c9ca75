// SPDX-License-Identifier: MIT
//
// Host-overhead emulation: the gaps between top-level ops (closed-form
// expectations on a hand-timed trace), the instrumentation cost measured on
// this libtorch, and a real fleet sample replayed with the emulation on.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/kineto/kineto_linker.h"
#include "core/trace_io.h"
#include "replayer/host_time.h"
#include "replayer/replayer.h"
#include "replayer/timer.h"
#include "tests/replayer/replay_helpers.h"

namespace etb::replay {
namespace {

trace::Node timedNode(trace::Trace& t, trace::NodeId id, trace::NodeId parent,
                      trace::NodeKind kind, double start, double dur) {
  trace::Node n;
  n.id = id;
  n.parent = parent;
  n.kind = kind;
  n.tid = 1;
  n.name = t.strings.intern(kind == trace::NodeKind::kOperator ? "aten::mm" : "label");
  n.start_us = start;
  n.dur_us = dur;
  return n;
}

// Marker [0, 1000] on thread 1 with: op A [100, 300] holding a child
// [150, 160]; label L [350, 360] in the gap; a label E that starts in the gap
// at 400 and ends inside op B's gap tail at 950; op B [500, 700]; op C on
// another thread [720, 730]; op D with no profiler time; an operator F
// [370, 380] in the A-B gap that is not replayed (as under a comm wrapper).
struct Fixture {
  trace::Trace t;
  trace::Iteration it;
  std::vector<SelectedNode> selected;

  Fixture() {
    using K = trace::NodeKind;
    t.nodes.push_back(timedNode(t, 1, 1, K::kRoot, -1, -1));
    t.nodes.push_back(timedNode(t, 2, 1, K::kMarker, 0, 1000));
    t.nodes.push_back(timedNode(t, 3, 2, K::kOperator, 100, 200));   // A
    t.nodes.push_back(timedNode(t, 4, 3, K::kOperator, 150, 10));    // child of A
    t.nodes.push_back(timedNode(t, 5, 2, K::kLabel, 350, 10));       // L
    t.nodes.push_back(timedNode(t, 6, 2, K::kLabel, 400, 550));      // E
    t.nodes.push_back(timedNode(t, 7, 6, K::kOperator, 500, 200));   // B
    t.nodes.push_back(timedNode(t, 8, 2, K::kOperator, 720, 10));    // C
    t.nodes.back().tid = 2;
    t.nodes.push_back(timedNode(t, 9, 2, K::kOperator, -1, -1));     // D
    t.nodes.push_back(timedNode(t, 10, 2, K::kOperator, 370, 10));   // F
    t.finalize();
    it.marker = 2;
    it.begin = 2;
    it.end = 11;
    it.name = "ProfilerStep#1";
    it.start_us = 0;
    it.dur_us = 1000;
    for (uint32_t i : {2u, 6u, 7u, 8u}) selected.push_back({i, false});  // A, B, C, D
  }
};

// Labels cost half a label event per boundary, operators half an operator
// event: costing the autograd engine's labels as operators took more out of
// the LSTM sample's gaps than they held.
TEST(HostTime, GapsLessInstrumentationPerBoundaryByKind) {
  Fixture f;
  ProfilerCost cost;
  cost.per_event_us = 4;
  cost.per_label_us = 2;
  cost.per_gap_us = 1;
  const HostGaps g = originalHostGaps(f.t, f.it, f.selected, cost);
  ASSERT_EQ(g.before_us.size(), 4u);
  EXPECT_DOUBLE_EQ(g.before_us[0], 100 - 1);  // marker start -> A
  // A -> B: L start+end and E start (labels, 1 each), F start+end (ops, 2 each)
  EXPECT_DOUBLE_EQ(g.before_us[1], 200 - 1 - 3 * 1.0 - 2 * 2.0);
  EXPECT_DOUBLE_EQ(g.before_us[2], 0);              // other thread: overlaps
  EXPECT_DOUBLE_EQ(g.before_us[3], 0);              // untimed
  EXPECT_DOUBLE_EQ(g.after_us, 300 - 1 - 1 * 1.0);  // B -> marker end: E's end
  EXPECT_DOUBLE_EQ(g.recorded_us, 100 + 200 + 300);
  EXPECT_DOUBLE_EQ(g.emulated_us, 99 + 192 + 298);
  EXPECT_EQ(g.boundaries, 6u);
  EXPECT_EQ(g.label_boundaries, 4u);
  EXPECT_EQ(g.untimed, 1u);
  EXPECT_EQ(g.gaps, 3u);
}

// The tail gap [700, 1000] has one event end at 950: its 250 us of silence
// before it exceed a 100 us stall limit and are dropped whole.
TEST(HostTime, EventlessStretchBeyondTheLimitIsNotHostTime) {
  Fixture f;
  ProfilerCost cost;
  cost.per_event_us = 4;
  cost.per_label_us = 4;
  cost.per_gap_us = 1;
  const HostGaps g = originalHostGaps(f.t, f.it, f.selected, cost, 100);
  EXPECT_DOUBLE_EQ(g.after_us, 300 - 250 - 1 - 2.0);
  EXPECT_DOUBLE_EQ(g.before_us[1], 200 - 1 - 10.0);  // longest silence 100: not beyond
  EXPECT_EQ(g.stalls, 1u);
  EXPECT_DOUBLE_EQ(g.stalled_us, 250);
  const HostGaps unlimited = originalHostGaps(f.t, f.it, f.selected, cost, 0);
  EXPECT_EQ(unlimited.stalls, 0u);
  EXPECT_DOUBLE_EQ(unlimited.after_us, 300 - 1 - 2.0);
}

// The recording's figures replace this process's per event and per label;
// of an operator's cost, the part outside its span keeps the share measured
// here (1 of 4 here: a quarter of the recording's 12). The gaps then come
// out of the fixture in closed form at those costs.
TEST(HostTime, TheRecordingsInstrumentationCostReplacesThisProcesss) {
  ProfilerCost here;
  here.per_event_us = 4;
  here.per_label_us = 2;
  here.per_gap_us = 1;
  here.ops_called = 7;
  const ProfilerCost used = withRecordingCost(here, RecordedInstrumentation{12, 30});
  EXPECT_DOUBLE_EQ(used.per_event_us, 12);
  EXPECT_DOUBLE_EQ(used.per_label_us, 30);
  EXPECT_DOUBLE_EQ(used.per_gap_us, 3);
  EXPECT_EQ(used.ops_called, 7u);
  Fixture f;
  const HostGaps g = originalHostGaps(f.t, f.it, f.selected, used);
  // A -> B: three label boundaries at 15, two operator boundaries at 6, 3 per gap
  EXPECT_DOUBLE_EQ(g.before_us[1], 200 - 3 - 3 * 15.0 - 2 * 6.0);
  EXPECT_DOUBLE_EQ(g.after_us, 300 - 3 - 15.0);
  // A recording that measured nothing between ops leaves no gap share either.
  EXPECT_DOUBLE_EQ(withRecordingCost(ProfilerCost{}, RecordedInstrumentation{12, 30}).per_gap_us, 0);
}

TEST(HostTime, CostLargerThanAGapLeavesNothing) {
  Fixture f;
  ProfilerCost cost;
  cost.per_event_us = 1000;
  cost.per_label_us = 1000;
  cost.per_gap_us = 500;
  const HostGaps g = originalHostGaps(f.t, f.it, f.selected, cost);
  EXPECT_DOUBLE_EQ(g.emulated_us, 0);
  EXPECT_EQ(g.gaps, 0u);
}

TEST(HostTime, NeedsProfiledIteration) {
  Fixture f;
  f.it.start_us = -1;
  f.it.dur_us = -1;
  try {
    originalHostGaps(f.t, f.it, f.selected, ProfilerCost{});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--kineto"), std::string::npos) << e.what();
  }
}

// The real ET observer + profiler of this libtorch cost something per event,
// and the part between two ops is part of it.
TEST(HostTime, MeasuresInstrumentationCostOnThisLibtorch) {
  const ProfilerCost c = measureProfilerCost(500, 3);
  EXPECT_GE(c.events, 500u);
  EXPECT_GT(c.per_event_us, 0.0);
  EXPECT_GT(c.per_label_us, 0.0) << "the autograd engine's labels cost something too";
  EXPECT_GE(c.per_gap_us, 0.0);
  EXPECT_LE(c.per_gap_us, c.per_event_us);
  EXPECT_LT(c.per_event_us, 10000.0) << "a callback pair costing 10 ms is a measuring error";
  EXPECT_LT(c.per_label_us, 10000.0);
}

// spinFor counts CPU time, so at least as much wall time passes.
TEST(HostTime, SpinWaitsAtLeastTheTime) {
  const double t0 = nowUs();
  spinFor(2000);
  EXPECT_GE(nowUs() - t0, 2000.0);
}

// The LSTM sample spends much of its step in the autograd engine between
// ops: with the emulation on, every iteration holds at least the inserted
// host time, which is positive and below the profiled gaps.
TEST(HostTime, FleetLstmReplaysWithHostTime) {
  const std::string dir = std::string(ETB_SOURCE_DIR) + "/fleet_samples/lstm/";
  trace::Trace t = trace::readTrace(dir + "lstm.et.json.gz");
  trace::linkKineto(t, dir + "lstm.kineto.json.gz");
  ReplayOptions o = test::replayOptions(1, 2, test::Verify::kNo);
  o.threads = 1;
  o.emulate_host = true;
  o.original_source = "kineto";
  const ReplayResult r = test::replayLocal(t, o);
  ASSERT_TRUE(r.host_time.has_value());
  const HostTime& h = *r.host_time;
  EXPECT_GT(h.emulated_ms, 0.0);
  EXPECT_LT(h.emulated_ms, h.recorded_gap_ms);
  EXPECT_GT(h.boundaries, 100u) << "autograd nodes lie between the LSTM's backward ops";
  ASSERT_EQ(h.with_host_iter_ms.samples.size(), 2u);
  EXPECT_GE(h.with_host_iter_ms.min, h.emulated_ms);
  EXPECT_GT(h.profiler_event_us, 0.0);
}

TEST(HostTime, OffByDefault) {
  const std::string dir = std::string(ETB_SOURCE_DIR) + "/fleet_samples/mlp/";
  trace::Trace t = trace::readTrace(dir + "mlp.et.json.gz");
  EXPECT_FALSE(test::replayLocal(t, test::replayOptions(0, 1, test::Verify::kNo)).host_time.has_value());
}

}  // namespace
}  // namespace etb::replay
