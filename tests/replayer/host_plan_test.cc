// SPDX-License-Identifier: MIT
//
// Host-time emulation against the replay: what the replay already spends
// between ops comes off the original's gaps, the spins add up to what was
// asked, and the instrumentation is measured again on the replay's own ops.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <numeric>

#include "core/kineto/kineto_linker.h"
#include "core/trace_io.h"
#include "replayer/host_plan.h"
#include "replayer/op_selection.h"
#include "replayer/replayer.h"

namespace etb::replay {
namespace {

// Planted fault: gaps not reduced, or reduced below zero.
TEST(HostPlan, EmulatedGapIsOriginalLessReplayNeverNegative) {
  const std::vector<double> got = emulatedGaps({10, 3, 0, 7}, {4, 5, 1});
  ASSERT_EQ(got.size(), 4u);
  EXPECT_DOUBLE_EQ(got[0], 6);
  EXPECT_DOUBLE_EQ(got[1], 0);  // the replay already spends more there
  EXPECT_DOUBLE_EQ(got[2], 0);
  EXPECT_DOUBLE_EQ(got[3], 7);  // no replay figure: nothing taken off
}

// 2000 spins of 2 us: each costs about one read of the thread's CPU clock
// (a system call, 0.5-1.5 us here) more than it measures, which alone would
// add 1-3 ms (25-75%). Planted faults: the read's cost not taken off, the
// overshoot not carried to the next spin.
// Three trials, each with a spinner of its own (its own read-cost estimate):
// a preemption on a VM that reports no steal is counted in the thread's CPU
// time and only ever adds, so the least of three bounds the overshoot (one
// CI run under ctest's parallel load saw 4853 of 4000 in a single trial);
// a spinner that stops short does so in every trial, so the most of three
// bounds that side. A planted fault moves all three.
TEST(HostPlan, SpinsAddUpToWhatWasAsked) {
  double least = 1e300, most = 0;
  for (int trial = 0; trial < 3; ++trial) {
    HostSpinner s;
    const double t0 = threadCpuUs();
    for (int i = 0; i < 2000; ++i) s.spin(2.0);
    const double spent = threadCpuUs() - t0;
    least = std::min(least, spent);
    most = std::max(most, spent);
  }
  // Under load a read's cost measured at construction can come out high (a
  // spin then stops a little short: 3777 of 3800 seen at load 4).
  EXPECT_GT(most, 4000.0 * 0.9);
  // Without the carried debt each 2 us spin overshoots by about one clock
  // read (0.5-1.5 us here): +25-75%. With it, 4221 of 4200 was seen once
  // under load (two helpers building), and 4410 of 4000 in a CI run with
  // the estimate capped; the bound leaves 15%.
  EXPECT_LT(least, 4000.0 * 1.15) << "per-spin overshoot accumulates";
}

// A spin the host preempted for a millisecond (counted in the thread's CPU
// time on a VM that reports no steal) leaves the read estimate as it was;
// any other spin moves it by the average's weight times its difference, up
// or down, a slow one (a busy sibling thread) in full.
TEST(HostPlan, AStalledSpinLeavesTheReadCostAlone) {
  const double w = detail::kReadCostWeight;
  EXPECT_DOUBLE_EQ(detail::nextReadCost(0.5, 1000.0, 1), 0.5);
  EXPECT_DOUBLE_EQ(detail::nextReadCost(0.5, 7.5, 10), 0.5 + w * 0.25);
  EXPECT_DOUBLE_EQ(detail::nextReadCost(0.5, 3.0, 10), 0.5 - w * 0.2);
  EXPECT_DOUBLE_EQ(detail::nextReadCost(0.5, 35.0, 10), 0.5 + w * 3.0);  // 7x: followed
  EXPECT_DOUBLE_EQ(detail::nextReadCost(0.5, 0.0, 0), 0.5);
  EXPECT_DOUBLE_EQ(detail::nextReadCost(0, 3.0, 10), w * 0.3);  // nothing known yet
}

// Whole-microsecond gaps of 2 and 3: the median says 3, the trimmed mean
// keeps the fraction and drops the outliers (the top and bottom 10%).
TEST(HostPlan, TrimmedMeanKeepsTheFraction) {
  std::vector<double> xs = {0, 2, 2, 2, 3, 3, 3, 3, 2, 500};  // 0 and 500 trimmed
  EXPECT_DOUBLE_EQ(detail::trimmedMean(xs), 20.0 / 8);
  EXPECT_DOUBLE_EQ(detail::trimmedMean({}), 0);
}

detail::IterationRecord leads(std::vector<double> lead, double tail) {
  detail::IterationRecord r;
  r.lead_us = std::move(lead);
  r.tail_us = tail;
  return r;
}

// Per step the median over ops-only iterations (one slow iteration does not
// move it); the tail comes off the gap after the last op.
TEST(HostPlan, SubtractsTheReplaysMedianGapPerStep) {
  detail::HostPlan hp;
  hp.original_us = {50, 5, 20};
  hp.gaps.after_us = 30;
  const std::vector<detail::IterationRecord> ops_only = {
      leads({2, 6, 4}, 10), leads({3, 7, 5}, 12), leads({900, 900, 900}, 900)};
  detail::subtractReplayGaps(hp, ops_only);
  ASSERT_EQ(hp.before_us.size(), 3u);
  EXPECT_DOUBLE_EQ(hp.before_us[0], 50 - 3);
  EXPECT_DOUBLE_EQ(hp.before_us[1], 0);
  EXPECT_DOUBLE_EQ(hp.before_us[2], 20 - 5);
  EXPECT_DOUBLE_EQ(hp.after_us, 30 - 12);
  EXPECT_DOUBLE_EQ(hp.emulated_us, 47 + 15 + 18);
  EXPECT_DOUBLE_EQ(hp.replay_between_us, 3 + 7 + 5 + 12);  // median iteration's sum
}

detail::Plan namedPlan(const std::vector<std::string>& names) {
  detail::Plan p;
  for (const std::string& n : names) {
    detail::PlanStep s;
    s.name = n;
    p.steps.push_back(s);
  }
  return p;
}

// A nested event of the same name as its parent is passed over (the parent
// starts first, or at the same time and lasts longer); a step without a call
// has no event. Planted fault: matching the child instead of the parent.
TEST(HostPlan, OutsideSpansMatchTopLevelEventsInOrder) {
  const detail::Plan plan = namedPlan({"aten::add", "aten::view", "aten::mm", "aten::add"});
  detail::IterationRecord rec;
  rec.call_us = {12, -1, 30, 9};
  const std::vector<RecordedEvent> events = {
      {"aten::mm", 20, 25},  {"aten::add", 0, 10}, {"aten::add", 0, 4},  // child of the first
      {"aten::add", 50, 6},  {"aten::empty", 21, 1}};
  std::vector<double> outside;
  EXPECT_EQ(detail::outsideSpans(plan, rec, events, outside), 3u);
  ASSERT_EQ(outside.size(), 3u);
  EXPECT_DOUBLE_EQ(outside[0], 12 - 10);
  EXPECT_DOUBLE_EQ(outside[1], 30 - 25);
  EXPECT_DOUBLE_EQ(outside[2], 9 - 6);
  // An op whose event is missing stops the matching there.
  const detail::Plan other = namedPlan({"aten::add", "aten::bmm", "aten::mm"});
  detail::IterationRecord rec2;
  rec2.call_us = {12, 5, 30};
  outside.clear();
  EXPECT_EQ(detail::outsideSpans(other, rec2, events, outside), 1u);
}

// Only calls that are light without the instrumentation count, per event
// they hold. Planted faults: heavy calls counted (their kernels' noise), the
// nested events not counted.
TEST(HostPlan, LightOpCostPerEventOfLightCallsOnly) {
  detail::IterationRecord off, on;
  off.call_us = {10, 100, 20, -1};
  on.call_us = {40, 400, 50, 5};
  const std::vector<detail::MatchedOp> matched = {{0, 8, 20}, {1, 90, 1}, {2, 9, 30}};
  EXPECT_DOUBLE_EQ(detail::lightOpCost(off, on, matched, 50), (30.0 + 30.0) / 50);
  // Too few events in light calls to say anything.
  EXPECT_DOUBLE_EQ(detail::lightOpCost(off, on, {{0, 8, 20}}, 50), -1);
}

// The events nested in a matched op are counted with it.
TEST(HostPlan, MatchedOpsCountTheirNestedEvents) {
  const detail::Plan plan = namedPlan({"aten::bmm", "aten::add"});
  detail::IterationRecord rec;
  rec.call_us = {40, 5};
  const std::vector<RecordedEvent> events = {{"aten::bmm", 0, 30},   {"aten::select", 2, 1},
                                             {"aten::mm", 4, 10},    {"aten::select", 15, 1},
                                             {"aten::add", 35, 2}};
  const std::vector<detail::MatchedOp> m = detail::matchEvents(plan, rec, events);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].events, 4u);
  EXPECT_EQ(m[1].events, 1u);
  EXPECT_EQ(m[1].step, 1u);
}

struct SampleReplay {
  trace::Trace trace;
  std::vector<SelectedNode> selected;
  detail::Plan plan;
  std::unique_ptr<Communicator> comm = makeLocalCommunicator();
  std::unique_ptr<DeviceSync> sync = makeDeviceSync("cpu");

  explicit SampleReplay(const std::string& name = "mlp") {
    const std::string dir = std::string(ETB_SOURCE_DIR) + "/fleet_samples/" + name + "/";
    trace = trace::readTrace(dir + name + ".et.json.gz");
    selected = selectNodes(trace, chooseIteration(trace, 0));
    detail::PlanOptions o;
    plan = detail::buildPlan(trace, selected, o);
  }
};

// The executor's accounting: for every step either its op call or, with no
// call, the whole step; the rest is the replay's own time (lead_us, tail_us).
// Together they are the iteration. Planted fault: leads measured from the
// step's start (argument set-up would count as the op's).
TEST(HostPlan, ExecutorAccountsEveryMicrosecond) {
  SampleReplay m;
  detail::Executor exec(m.trace, m.plan, *m.comm, *m.sync);
  exec.runIteration(false, nullptr);
  const detail::IterationRecord r = exec.runIteration(false, nullptr);
  double sum = r.tail_us;
  size_t called = 0;
  for (size_t i = 0; i < r.lead_us.size(); ++i) {
    EXPECT_GE(r.lead_us[i], 0.0) << i;
    sum += r.lead_us[i] + (r.call_us[i] >= 0 ? r.call_us[i] : r.step_us[i]);
    called += r.call_us[i] >= 0 ? 1 : 0;
  }
  EXPECT_GT(called, 0u);
  EXPECT_NEAR(sum, r.wall_us, 0.01 * r.wall_us);
  // Argument set-up is not part of the call: some lead is positive.
  EXPECT_GT(std::accumulate(r.lead_us.begin(), r.lead_us.end(), 0.0), 0.0);
}

// On real ops every call finds its profiled event, and a recorded event
// costs something; labels scale with the operators (the replay has none).
TEST(HostPlan, CalibratesOnTheReplaysOwnOps) {
  SampleReplay m;
  detail::Executor exec(m.trace, m.plan, *m.comm, *m.sync);
  exec.runIteration(false, nullptr);
  ProfilerCost hot;
  hot.per_event_us = 4;
  hot.per_label_us = 2;
  hot.per_gap_us = 1;
  std::vector<detail::IterationRecord> plain;
  const ProfilerCost c = detail::calibrateOnReplay(exec, m.plan, hot, plain, 1);
  EXPECT_EQ(plain.size(), 1u);
  EXPECT_GT(c.ops_called, 10u);
  EXPECT_EQ(c.ops_matched, c.ops_called);
  EXPECT_GT(c.per_event_us, 0.0);
  EXPECT_DOUBLE_EQ(c.per_label_us, 2 * c.per_event_us / 4);
  EXPECT_LE(c.per_gap_us, c.per_event_us);
}

long minorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The calibration runs in a child process: afterwards the replay faults in
// fresh pages as often as before. Calibrated in the replay's own process,
// the profiler's buffers raised glibc's mmap threshold and the GPT sample's
// ~2000 faults per iteration dropped to none (its ops-only time by 15%).
// Planted fault: calibrateOnReplay called in-process.
TEST(HostPlan, CalibrationLeavesTheReplaysAllocatorAlone) {
  SampleReplay m("gpt");
  detail::Executor exec(m.trace, m.plan, *m.comm, *m.sync);
  auto faultsPerIteration = [&] {
    exec.runIteration(false, nullptr);
    const long f0 = minorFaults();
    for (int i = 0; i < 3; ++i) exec.runIteration(false, nullptr);
    return (minorFaults() - f0) / 3;
  };
  exec.runIteration(false, nullptr);
  const long before = faultsPerIteration();
  if (before < 200) GTEST_SKIP() << "this allocator does not fault per iteration here";
  ProfilerCost hot;
  hot.per_event_us = 4;
  const std::optional<ProfilerCost> c = detail::calibrateInChild(exec, m.plan, hot);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->ops_matched, c->ops_called);
  EXPECT_GT(c->per_event_us, 0.0);
  EXPECT_GT(faultsPerIteration(), before / 2);
}

}  // namespace
}  // namespace etb::replay
