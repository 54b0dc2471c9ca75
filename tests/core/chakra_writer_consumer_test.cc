// SPDX-License-Identifier: MIT
//
// The writer's consumer forms on hand-built traces whose right answers are
// known: comm types ASTRA-sim cannot simulate are remapped (and counted),
// recorded attrs in a kind a getter cannot convert are written in its kind
// while our reader still gets the recorded attr back, group ids start at 1,
// and exclusive durations never count a child twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/chakra/chakra_reader.h"
#include "core/chakra/chakra_writer.h"
#include "core/model/trace_compare.h"
#include "schemas/et_def.pb.h"
#include "tests/core/chakra_conformance.h"
#include "tests/core/chakra_test_util.h"

namespace etb::trace {
namespace {
namespace pb = ChakraProtoMsg;

const pb::AttributeProto* attrOf(const pb::Node& n, const std::string& name) {
  for (const auto& a : n.attr()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

using test::addNode;

void addComm(Trace& t, Node& n, CommType type, const char* pg, int64_t seq = -1) {
  CommInfo c;
  c.type = type;
  c.pg_name = t.strings.intern(pg);
  c.bytes = 4096;
  c.seq = seq;
  n.comm = static_cast<int32_t>(t.comms.size());
  t.comms.push_back(c);
}

TEST(ChakraWriterConsumer, UnsimulatedCollectivesAreRemappedAndCounted) {
  Trace t;
  addNode(t, 1, 0, "[pytorch|profiler|execution_trace|thread]", NodeKind::kRoot);
  const std::pair<CommType, int> cases[] = {
      {CommType::kReduce, pb::COMM_COLL_NODE}, {CommType::kGather, pb::COMM_COLL_NODE},
      {CommType::kBarrier, pb::COMM_COLL_NODE}, {CommType::kScatter, pb::COMP_NODE},
      {CommType::kAllToAllV, pb::COMM_COLL_NODE}, {CommType::kUnknown, pb::COMP_NODE}};
  NodeId id = 2;
  for (const auto& c : cases) addComm(t, addNode(t, id++, 1, "record_param_comms", NodeKind::kCollective), c.first, "0");
  t.finalize();
  ChakraWriteReport report;
  const std::string bytes = writeChakraBytes(t, {}, &report);
  const std::vector<pb::Node> nodes = test::framedNodes(bytes);
  const int64_t want_type[] = {pb::ALL_REDUCE, pb::ALL_GATHER, pb::ALL_REDUCE, -1, pb::ALL_TO_ALL, -1};
  for (size_t k = 0; k < 6; ++k) {
    const pb::Node& n = nodes[k + 1];
    EXPECT_EQ(n.type(), cases[k].second) << k;
    if (want_type[k] >= 0) {
      EXPECT_EQ(attrOf(n, "comm_type")->int64_val(), want_type[k]) << k;
    }
  }
  EXPECT_EQ(report.remapped.at("reduce->ALL_REDUCE"), 1u);
  EXPECT_EQ(report.remapped.at("gather->ALL_GATHER"), 1u);
  EXPECT_EQ(report.remapped.at("barrier->ALL_REDUCE(1 byte)"), 1u);
  EXPECT_EQ(report.remapped.size(), 5u);  // + scatter->COMP, unknown->COMP
  const test::Conformance c = test::checkChakraConformance(bytes);
  EXPECT_TRUE(c.violations.empty()) << c.summary();
  // Our reader still sees the recorded collectives.
  EXPECT_EQ(diffTraces(t, readChakraBytes(bytes, "x.et")), "");
}

// A collective the reader counts but cannot size (torch 1.13's bare
// gloo:all_to_all, comm -1) becomes a COMP node a simulator skips: listed
// among the remaps like the other substitutions, not silently.
TEST(ChakraWriterConsumer, AnUnsizedCollectiveIsListedAsRemapped) {
  Trace t;
  addNode(t, 1, 0, "[pytorch|profiler|execution_trace|thread]", NodeKind::kRoot);
  addNode(t, 2, 1, "gloo:all_to_all", NodeKind::kCollective);
  t.finalize();
  ChakraWriteReport report;
  const std::vector<pb::Node> nodes = test::framedNodes(writeChakraBytes(t, {}, &report));
  EXPECT_EQ(nodes.at(1).type(), pb::COMP_NODE);
  EXPECT_EQ(report.remapped.size(), 1u);
  EXPECT_EQ(report.remapped.count("collective without sizes->COMP"), 1u);
}

TEST(ChakraWriterConsumer, RecordedAttrsInOtherKindsAreWrittenAsGettersReadThem) {
  Trace t;
  Node& mm = addNode(t, 1, 0, "aten::mm", NodeKind::kOperator);
  Attr a;
  a.name = t.strings.intern("is_cpu_op");
  a.type = t.strings.intern("string");
  a.value = makeString(t, "False");
  mm.attrs.push_back(a);
  Node& coll = addNode(t, 2, 0, "record_param_comms", NodeKind::kCollective);
  addComm(t, coll, CommType::kAllReduce, "0");
  Attr pg;
  pg.name = t.strings.intern("pg_name");
  pg.type = t.strings.intern("string");
  pg.value = makeString(t, "0");
  coll.attrs.push_back(pg);
  addComm(t, addNode(t, 3, 0, "record_param_comms", NodeKind::kCollective), CommType::kAllGather, "3");
  t.finalize();
  const std::string bytes = writeChakraBytes(t);
  const std::vector<pb::Node> nodes = test::framedNodes(bytes);
  ASSERT_NE(attrOf(nodes[0], "is_cpu_op"), nullptr);
  EXPECT_EQ(attrOf(nodes[0], "is_cpu_op")->value_case(), pb::AttributeProto::kBoolVal);
  EXPECT_FALSE(attrOf(nodes[0], "is_cpu_op")->bool_val());
  EXPECT_EQ(attrOf(nodes[1], "pg_name")->string_val(), "1");  // recorded "0" -> id 1
  EXPECT_EQ(attrOf(nodes[2], "pg_name")->string_val(), "2");
  EXPECT_NE(attrOf(nodes[1], "etb_orig:pg_name"), nullptr);  // the recorded one rides along
  const test::Conformance c = test::checkChakraConformance(bytes);
  EXPECT_TRUE(c.violations.empty()) << c.summary();
  const Trace back = readChakraBytes(bytes, "x.et");
  EXPECT_EQ(diffTraces(t, back), "");
  EXPECT_EQ(writeChakraBytes(back), bytes);
}

TEST(ChakraWriterConsumer, ExclusiveTimesNeverCountAChildTwice) {
  Trace t;
  addNode(t, 1, 0, "[pytorch|profiler|execution_trace|thread]", NodeKind::kRoot);
  addNode(t, 2, 1, "ProfilerStep#1", NodeKind::kMarker, 100);
  addNode(t, 3, 2, "aten::linear", NodeKind::kOperator, 30);
  addNode(t, 4, 3, "aten::t", NodeKind::kOperator);  // untimed: its child counts
  addNode(t, 5, 4, "aten::transpose", NodeKind::kOperator, 5);
  addNode(t, 6, 3, "aten::addmm", NodeKind::kOperator, 20.4);
  Node& coll = addNode(t, 7, 2, "record_param_comms", NodeKind::kCollective, 40);
  addComm(t, coll, CommType::kAllReduce, "0", 9);
  addNode(t, 8, 7, "nccl:all_reduce", NodeKind::kOperator, 35);
  Node& wait = addNode(t, 9, 2, "c10d::wait", NodeKind::kWait, 12);
  addComm(t, wait, CommType::kWait, "0", 9);
  t.finalize();
  const std::vector<pb::Node> nodes = test::framedNodes(writeChakraBytes(t));
  std::map<uint64_t, uint64_t> dur;
  for (const pb::Node& n : nodes) dur[n.id()] = n.duration_micros();
  EXPECT_EQ(dur[2], 100u - 30 - 40 - 12);  // the step's own time
  EXPECT_EQ(dur[3], 5u);                   // 30 - 5 (through untimed aten::t) - 20.4, carried
  EXPECT_EQ(dur[5], 5u);
  EXPECT_EQ(dur[6], 20u);
  EXPECT_EQ(dur[7], 40u);  // the collective: its whole time
  EXPECT_EQ(dur[8], 0u);   // beneath it: the simulator models the transfer
  EXPECT_EQ(dur[9], 0u);   // a wait: the simulator decides
  uint64_t sum = 0;
  for (const auto& [id, d] : dur) sum += d;
  EXPECT_EQ(sum, 100u - 12);  // the step, minus the wait the simulator models
  // The wait depends on its collective, the collective on the thread's chain.
  for (const pb::Node& n : nodes) {
    if (n.id() == 9) {
      EXPECT_NE(std::find(n.data_deps().begin(), n.data_deps().end(), 7u), n.data_deps().end());
    }
  }
}

TEST(ChakraWriterConsumer, GpuKernelsFollowTheirLauncherAndTheirStream) {
  Trace t;
  addNode(t, 1, 0, "aten::mm", NodeKind::kOperator, 10);
  addNode(t, 2, 0, "aten::relu", NodeKind::kOperator, 4);
  auto kernel = [&](NodeId id, NodeId launcher, int64_t stream) {
    Node& k = addNode(t, id, launcher, "sgemm_kernel", NodeKind::kKernel, 50);
    Attr a;
    a.name = t.strings.intern("stream");
    a.type = t.strings.intern("int64");
    a.value = makeInt(t, stream, "int64");
    k.attrs.push_back(a);
  };
  kernel(3, 1, 7);
  kernel(4, 2, 7);
  kernel(5, 2, 9);
  t.finalize();
  const std::string bytes = writeChakraBytes(t);
  std::map<uint64_t, std::vector<uint64_t>> deps;
  std::map<uint64_t, bool> cpu;
  for (const pb::Node& n : test::framedNodes(bytes)) {
    deps[n.id()].assign(n.data_deps().begin(), n.data_deps().end());
    cpu[n.id()] = attrOf(n, "is_cpu_op")->bool_val();
  }
  EXPECT_EQ(deps[3], std::vector<uint64_t>{1});        // its launch
  EXPECT_EQ(deps[4], (std::vector<uint64_t>{2, 3}));   // its launch, then stream 7's previous
  EXPECT_EQ(deps[5], std::vector<uint64_t>{2});        // stream 9 runs beside stream 7
  EXPECT_EQ(deps[2], std::vector<uint64_t>{1});        // the CPU chain ignores kernels
  EXPECT_TRUE(cpu[1]);
  EXPECT_FALSE(cpu[3]);  // on the GPU lane of the simulator
  const test::Conformance c = test::checkChakraConformance(bytes);
  EXPECT_TRUE(c.violations.empty()) << c.summary();
}

TEST(ChakraWriterConsumer, ProfilerKernelsBecomeGpuNodesBehindTheirLaunch) {
  Trace t;
  addNode(t, 1, 0, "aten::mm", NodeKind::kOperator, 10);
  addNode(t, 2, 0, "aten::add", NodeKind::kOperator, 4);
  Node& coll = addNode(t, 3, 0, "record_param_comms", NodeKind::kCollective, 9);
  addComm(t, coll, CommType::kAllReduce, "0");
  auto kernel = [&](NodeId node, const char* name, double start, double dur, int64_t stream) {
    KernelEvent k;
    k.node = node;
    k.name = t.strings.intern(name);
    k.start_us = start;
    k.dur_us = dur;
    k.stream = stream;
    t.kernels.push_back(k);
  };
  kernel(2, "add_kernel", 30, 7.5, 7);  // file order is not launch order
  kernel(1, "gemm_kernel", 12, 100.25, 7);
  kernel(3, "ncclDevKernel_AllReduce", 140, 50, 9);  // the transfer: simulated, not written
  t.finalize();
  ChakraWriteReport report;
  const std::string bytes = writeChakraBytes(t, {}, &report);
  const std::vector<pb::Node> nodes = test::framedNodes(bytes);
  ASSERT_EQ(nodes.size(), 5u);
  EXPECT_EQ(report.gpu_kernels, 2u);
  EXPECT_EQ(nodes[3].name(), "gemm_kernel");
  EXPECT_EQ(nodes[3].id(), 4u);
  EXPECT_EQ(std::vector<uint64_t>(nodes[3].data_deps().begin(), nodes[3].data_deps().end()),
            std::vector<uint64_t>{1});
  EXPECT_EQ(std::vector<uint64_t>(nodes[4].data_deps().begin(), nodes[4].data_deps().end()),
            (std::vector<uint64_t>{2, 4}));
  EXPECT_EQ(nodes[3].duration_micros() + nodes[4].duration_micros(), 108u);  // 107.75, carried
  EXPECT_FALSE(attrOf(nodes[3], "is_cpu_op")->bool_val());
  // The all-reduce waits for the compute stream's last kernel.
  const auto& cd = nodes[2].data_deps();
  EXPECT_NE(std::find(cd.begin(), cd.end(), 5u), cd.end());
  const test::Conformance c = test::checkChakraConformance(bytes);
  EXPECT_TRUE(c.violations.empty()) << c.summary();
  const Trace back = readChakraBytes(bytes, "x.et");
  EXPECT_EQ(back.nodes.size(), 3u);
  EXPECT_EQ(diffTraces(t, back), "");
  EXPECT_EQ(writeChakraBytes(back), bytes);
}

}  // namespace
}  // namespace etb::trace
