// SPDX-License-Identifier: MIT
#include "core/kineto/kineto_linker.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "core/base/error.h"
#include "core/pytorch_et/et_json_reader.h"
#include "core/base/file_io.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

LinkStats linkPair(const std::string& et, const std::string& kineto, Trace* out) {
  *out = readEtJson(et);
  const LinkStats s = linkKineto(*out, kineto);
  std::fprintf(stderr, "%s: %zu/%zu operators linked (%.1f%%), %zu nodes, %zu kernels, key %s\n",
               et.c_str(), s.linked_operators, s.operators,
               100.0 * static_cast<double>(s.linked_operators) / static_cast<double>(s.operators),
               s.linked_nodes, s.kernels, s.key.c_str());
  return s;
}

void expectMostOperatorsLinked(const LinkStats& s) {
  ASSERT_GT(s.operators, 0u);
  EXPECT_GE(static_cast<double>(s.linked_operators), 0.95 * static_cast<double>(s.operators));
  EXPECT_GT(s.kernels, 0u);
}

TEST(KinetoLinker, ParamLinearPair) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  Trace t;
  const LinkStats s = linkPair(dir + "/param/linear_et.json.gz", dir + "/param/linear_kineto.json.gz", &t);
  expectMostOperatorsLinked(s);
  EXPECT_EQ(s.key, "External id");  // mid-2023: External id == rf_id
  double gpu = 0;
  for (const Node& n : t.nodes) gpu += n.gpu_dur_us > 0 ? n.gpu_dur_us : 0;
  EXPECT_GT(gpu, 0);
  EXPECT_EQ(t.kernels.size(), s.kernels);
}

TEST(KinetoLinker, ParamResnetPair) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  Trace t;
  expectMostOperatorsLinked(linkPair(dir + "/param/at-fe2a39d0/resnet_et.json.gz",
                                     dir + "/param/resnet_kineto.json.gz", &t));
}

TEST(KinetoLinker, HtaPair) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  Trace t;
  expectMostOperatorsLinked(linkPair(dir + "/hta/benchmark_simple_add_et.json.gz",
                                     dir + "/hta/benchmark_simple_add_trace.json.gz", &t));
  for (const Node& n : t.nodes) {
    if (n.dur_us >= 0) {
      EXPECT_GT(n.start_us, 0);
    }
  }
}

TEST(KinetoLinker, DlrmEightRanksMatchRankByRank) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::vector<std::string> ets = test::extractArchive(dir + "/param/dlrm_pytorch_et.tar.gz");
  const std::vector<std::string> kinetos = test::extractArchive(dir + "/param/dlrm_kineto.tar.gz");
  size_t pairs = 0;
  for (int r = 0; r < 8; ++r) {
    std::string et, kineto;
    for (const std::string& f : ets) {
      if (f.find("dlrm_eg_" + std::to_string(r) + ".json") != std::string::npos) et = f;
    }
    for (const std::string& f : kinetos) {
      if (f.find("worker" + std::to_string(r) + "_") != std::string::npos) kineto = f;
    }
    ASSERT_FALSE(et.empty() || kineto.empty()) << "rank " << r;
    SCOPED_TRACE(et);
    Trace t;
    expectMostOperatorsLinked(linkPair(et, kineto, &t));
    ++pairs;
  }
  EXPECT_EQ(pairs, 8u);
}

// Current PyTorch: "Record function id" == rf_id; External id is unrelated and
// the launch's External id names the op; kernels join by correlation.
TEST(KinetoLinker, RecordFunctionIdWinsWhenItOverlapsBetter) {
  Trace t;
  t.pid = 9;
  for (NodeId id : {5, 6}) {
    Node n;
    n.id = id;
    n.kind = NodeKind::kOperator;
    n.rf_id = id * 100;
    n.name = t.strings.intern("aten::op");
    t.nodes.push_back(n);
  }
  const std::string dir = test::makeTempDir("kineto");
  writeFileMaybeGzip(dir + "/k.json.gz", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": 9, "tid": 1, "ts": 10, "dur": 5,
     "args": {"External id": 5, "Record function id": 500}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": 9, "tid": 1, "ts": 20, "dur": 7.5,
     "args": {"External id": 6, "Record function id": 600}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 1, "ts": 21,
     "dur": 1, "args": {"External id": 6, "correlation": 77}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30, "dur": 4,
     "args": {"correlation": 77, "device": 0, "stream": 7}}]})");
  const LinkStats s = linkKineto(t, dir + "/k.json.gz");
  EXPECT_EQ(s.key, "Record function id");
  EXPECT_EQ(s.linked_operators, 2u);
  EXPECT_EQ(t.nodes[1].start_us, 20);
  EXPECT_EQ(t.nodes[1].dur_us, 7.5);
  EXPECT_EQ(t.nodes[1].gpu_dur_us, 4);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].node, 6u);
  EXPECT_EQ(t.kernels[0].stream, 7);
}

TEST(KinetoLinker, BadKinetoFileIsAnInputError) {
  const std::string dir = test::makeTempDir("kineto");
  writeFileMaybeGzip(dir + "/bad.json", "{\"traceEvents\": [ {\"ph\": ");
  writeFileMaybeGzip(dir + "/none.json", "{\"nodes\": []}");
  Trace t;
  EXPECT_THROW(linkKineto(t, dir + "/bad.json"), InputError);
  EXPECT_THROW(linkKineto(t, dir + "/none.json"), InputError);
  EXPECT_THROW(linkKineto(t, dir + "/missing.json"), InputError);
}

// Found by tests/fuzz/kineto_fuzz.cc: a quoted id with more digits than an
// int64 holds overflowed while being parsed. Such ids now match nothing.
TEST(KinetoLinker, OversizedIdsMatchNothing) {
  Trace t;
  Node n;
  n.id = 5;
  n.kind = NodeKind::kOperator;
  n.rf_id = 5;
  n.name = t.strings.intern("aten::op");
  t.nodes.push_back(n);
  const LinkStats s = linkKinetoText(t, R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": "184467440737095516150", "tid": 1,
     "ts": 1e300, "dur": 5, "args": {"External id": "99999999999999999999999",
     "Record function id": 1e30}}]})", "oversized.json");
  EXPECT_EQ(s.linked_operators, 0u);
  EXPECT_LT(t.nodes[0].dur_us, 0);
}

// Profiler ids 5 below the trace's rf_ids (our torch 1.13 DDP recordings):
// the events whose ids collide with other nodes must not link there; the
// shift that makes the names agree is found, and the step's time is the
// profiler's ProfilerStep event.
TEST(KinetoLinker, ShiftedIdsLinkByNameAndTheStepIsTheProfilerStep) {
  Trace t;
  const char* names[] = {"ProfilerStep#1", "aten::mm", "aten::relu", "aten::sum", "aten::zero_"};
  for (NodeId i = 0; i < 5; ++i) {
    Node n;
    n.id = 100 + i;
    n.kind = i == 0 ? NodeKind::kMarker : NodeKind::kOperator;
    n.rf_id = 9 + i;  // events carry 4 + i
    n.name = t.strings.intern(names[i]);
    t.nodes.push_back(n);
  }
  Iteration it;
  it.marker = 100;
  it.name = "ProfilerStep#1";
  t.iterations.push_back(it);
  std::string events;
  for (int i = 0; i < 5; ++i) {
    events += std::string(i ? "," : "") + R"({"ph": "X", "cat": "cpu_op", "name": ")" + names[i] +
              R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(10 * i) + R"(, "dur": )" +
              std::to_string(i == 0 ? 500 : i + 1) + R"(, "args": {"Record function id": )" +
              std::to_string(4 + i) + "}}";
  }
  // ids 9..12 exist in the profiler too, under other names (as in the real files)
  events += R"(, {"ph": "X", "cat": "cpu_op", "name": "Optimizer.zero_grad", "pid": 1, "tid": 1,
               "ts": 60, "dur": 0.9, "args": {"Record function id": 9}})";
  linkKinetoText(t, "{\"traceEvents\": [" + events + "]}", "shifted.json");
  ASSERT_EQ(t.iterations.size(), 1u);
  EXPECT_EQ(t.iterations[0].dur_us, 500);
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(t.nodes[i].dur_us, static_cast<double>(i + 1)) << names[i];
}

}  // namespace
}  // namespace etb::trace
