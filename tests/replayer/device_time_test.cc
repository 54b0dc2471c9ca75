// SPDX-License-Identifier: MIT
//
// The original's device time per op, per kind and per iteration
// (replayer/device_time.h) through a real CPU replay of a built trace whose
// nodes carry linked kernel times; and the reporters' device columns.
#include <gtest/gtest.h>

#include <sstream>

#include "replayer/report_html.h"
#include "replayer/report_text.h"
#include "replayer/replayer.h"
#include "tests/replayer/report_fixture.h"
#include "tests/replayer/replay_helpers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {

// A node below `parent` that launched kernels of `gpu_us` (what the Kineto
// linker leaves on the innermost op); not selected, it runs inside parent.
void addChild(trace::Trace& t, trace::NodeId id, trace::NodeId parent, double gpu_us) {
  trace::Node n;
  n.id = id;
  n.parent = parent;
  n.kind = trace::NodeKind::kOperator;
  n.name = t.strings.intern("aten::child_op");
  n.dur_us = 1;
  n.gpu_dur_us = gpu_us;
  t.nodes.push_back(n);
}

// Three relus: the first with kernels of its own and of two levels of
// children; the second linked without kernels; the third unlinked (no
// profiler time) with a linked child whose kernels must not count for it.
trace::Trace linkedTrace() {
  test::TraceBuilder b;
  const trace::NodeId a = b.op("aten::relu(Tensor self) -> Tensor", {b.tensor({8})}, {b.tensor({8})});
  const trace::NodeId c = b.op("aten::relu(Tensor self) -> Tensor", {b.tensor({8})}, {b.tensor({8})});
  const trace::NodeId d = b.op("aten::relu(Tensor self) -> Tensor", {b.tensor({8})}, {b.tensor({8})});
  trace::Trace& t = b.trace();
  addChild(t, 100, a, 7);
  addChild(t, 101, 100, 11);  // a grandchild: still a's, once
  addChild(t, 102, d, 13);
  for (trace::Node& n : t.nodes) {
    if (n.id == a) n.gpu_dur_us = 5, n.dur_us = 40;
    if (n.id == c) n.dur_us = 30;
  }
  return b.finish();
}

ReplayResult replayOnCpu(const trace::Trace& t) {
  ReplayOptions o = test::replayOptions(0, 1, test::Verify::kNo);
  o.device_op_iters = 3;  // ignored on CPU
  return test::replayLocal(t, o);
}

TEST(DeviceTime, OriginalCountsEachKernelOnceForItsLinkedTopLevelOp) {
  const ReplayResult r = replayOnCpu(linkedTrace());
  ASSERT_EQ(r.ops.size(), 3u);
  EXPECT_DOUBLE_EQ(r.ops[0].original_device_us, 5 + 7 + 11);
  EXPECT_EQ(r.ops[1].original_device_us, -1);  // linked, no kernels
  EXPECT_EQ(r.ops[2].original_device_us, -1);  // unlinked: its child's are not its
  for (const OpStat& op : r.ops) EXPECT_EQ(op.device_us, -1) << "replay on CPU has no device time";
  ASSERT_EQ(r.kinds.size(), 1u);
  EXPECT_DOUBLE_EQ(r.kinds[0].original_device_us, 23);
  EXPECT_EQ(r.kinds[0].device_us, -1);
  ASSERT_TRUE(r.device_time.has_value());
  const DeviceTime& d = *r.device_time;
  EXPECT_DOUBLE_EQ(d.original_ms, (5 + 7 + 11 + 13) / 1e3);  // every linked kernel of the iteration
  EXPECT_DOUBLE_EQ(d.original_ops_ms, 23 / 1e3);
  EXPECT_EQ(d.original_comm_ms, 0);
  EXPECT_EQ(d.iters, 0);
  EXPECT_EQ(d.timed_ops, 0u);
  EXPECT_LT(d.replay_ms, 0);
}

TEST(DeviceTime, AbsentWithoutKernels) {
  test::TraceBuilder b;
  b.op("aten::relu(Tensor self) -> Tensor", {b.tensor({8})}, {b.tensor({8})});
  EXPECT_FALSE(replayOnCpu(b.finish()).device_time.has_value());
}


std::string text(const ReplayResult& r, size_t top = 20) {
  std::ostringstream os;
  printReport(r, os, top);
  return os.str();
}

TEST(ReportDeviceTime, TextColumnsOnlyWithDeviceTimes) {
  EXPECT_EQ(text(testing::sampleResult()).find("orig device"), std::string::npos);
  const std::string out = text(testing::withDeviceTimes());
  EXPECT_NE(out.find("orig device"), std::string::npos) << out;
  EXPECT_NE(out.find("2.100 ms"), std::string::npos) << out;  // mm's replay device time
  EXPECT_NE(out.find("1.900 ms"), std::string::npos) << out;
  // Busy shares of the iteration medians (10.9 and 10.0 ms).
  EXPECT_NE(out.find("replay 2.100 ms = 19% of its iteration (1 ops, medians over 3 iterations"),
            std::string::npos) << out;
  EXPECT_NE(out.find("original 7.250 ms = 72"), std::string::npos) << out;
  EXPECT_NE(out.find("of it 2.350 ms in the replayed ops"), std::string::npos) << out;
  // The rest row sums the device columns of the kinds it folds (add_'s 450).
  const std::string top1 = text(testing::withDeviceTimes(), 1);
  const size_t rest = top1.find("(3 more kinds)");
  ASSERT_NE(rest, std::string::npos) << top1;
  EXPECT_NE(top1.substr(rest, top1.find('\n', rest) - rest).find("450.0 µs"), std::string::npos)
      << top1;
}

TEST(ReportDeviceTime, HtmlSectionOnlyWithDeviceTimes) {
  EXPECT_EQ(reportHtml(testing::sampleResult()).find("Device time"), std::string::npos);
  const std::string html = reportHtml(testing::withDeviceTimes());
  EXPECT_NE(html.find("Device time"), std::string::npos);
  EXPECT_NE(html.find("7.250 ms"), std::string::npos);
  EXPECT_NE(html.find("1.900 ms"), std::string::npos);
}

}  // namespace
}  // namespace etb::replay
