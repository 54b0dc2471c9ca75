// SPDX-License-Identifier: MIT
#include "core/kineto/kineto_linker.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <set>

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

// Every timed operator got the time of a profiler event of its own name,
// checked against a separate parse of the profiler file.
void expectLinkedNamesAgree(const Trace& t, const std::string& kineto) {
  const nlohmann::json k = nlohmann::json::parse(readFileMaybeGzip(kineto));
  std::set<std::pair<std::string, double>> events;  // (name, ts)
  for (const nlohmann::json& e : k["traceEvents"]) {
    if (e.contains("ts") && e["ts"].is_number() && e.contains("name") && e["name"].is_string()) {
      events.insert({e["name"].get<std::string>(), e["ts"].get<double>()});
    }
  }
  size_t checked = 0;
  for (const Node& n : t.nodes) {
    if (n.kind != NodeKind::kOperator || n.dur_us < 0) continue;
    ++checked;
    EXPECT_TRUE(events.count({std::string(t.str(n.name)), n.start_us}))
        << "node " << n.id << " " << t.str(n.name) << " timed from another op's event";
  }
  EXPECT_GT(checked, 0u);
}

// Mid-2023 PARAM pairs: the profiler's ids drift from the ET's rf_ids (it
// counts record functions the ET observer does not keep), so most ids name
// another op. Only ops whose names agree are linked, and the stats say how
// many ids were left out.
void expectDriftedIdsLeftOut(const Trace& t, const LinkStats& s, const std::string& kineto) {
  ASSERT_GT(s.operators, 0u);
  EXPECT_GT(s.linked_operators, 0u);
  EXPECT_GT(s.misnamed, 0u);
  EXPECT_GT(s.kernels, 0u);
  expectLinkedNamesAgree(t, kineto);
}

TEST(KinetoLinker, ParamLinearPair) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  Trace t;
  const std::string kineto = dir + "/param/linear_kineto.json.gz";
  const LinkStats s = linkPair(dir + "/param/linear_et.json.gz", kineto, &t);
  expectDriftedIdsLeftOut(t, s, kineto);
  EXPECT_EQ(s.key, "External id");  // mid-2023: External id stands for rf_id
  double gpu = 0;
  for (const Node& n : t.nodes) gpu += n.gpu_dur_us > 0 ? n.gpu_dur_us : 0;
  EXPECT_GT(gpu, 0);
  EXPECT_EQ(t.kernels.size(), s.kernels);
}

TEST(KinetoLinker, ParamResnetPair) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  Trace t;
  const std::string kineto = dir + "/param/resnet_kineto.json.gz";
  expectDriftedIdsLeftOut(t, linkPair(dir + "/param/at-fe2a39d0/resnet_et.json.gz", kineto, &t),
                          kineto);
}

TEST(KinetoLinker, HtaPair) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  Trace t;
  const std::string kineto = dir + "/hta/benchmark_simple_add_trace.json.gz";
  expectMostOperatorsLinked(linkPair(dir + "/hta/benchmark_simple_add_et.json.gz", kineto, &t));
  expectLinkedNamesAgree(t, kineto);
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
    expectDriftedIdsLeftOut(t, linkPair(et, kineto, &t), kineto);
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

// Every fleet sample's profiler file, each DDP rank's too: the recorder's
// "Record function id" must name the ET's own ops (on DDP runs torch 1.13's
// profiler ids part from the ET's rf_ids; written unaligned, 9-24% linked).
TEST(KinetoLinker, FleetSamplesLinkEveryOperatorByName) {
  const std::string root = std::string(ETB_SOURCE_DIR) + "/fleet_samples";
  size_t pairs = 0;
  for (const auto& dir : std::filesystem::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
      const std::string path = f.path().string();
      const std::string suffix = ".kineto.json.gz";
      if (path.size() < suffix.size() || path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      const std::string base = path.substr(0, path.size() - suffix.size());
      SCOPED_TRACE(base);
      Trace t;
      const LinkStats s = linkPair(base + ".et.json.gz", path, &t);
      // 90%, not all: the ET keeps a few ops the 1.13 profiler has no event
      // for (AdamW's per-step add/div on conv_adamw and gpt, 5-6%)
      EXPECT_GE(static_cast<double>(s.linked_operators), 0.9 * static_cast<double>(s.operators));
      EXPECT_EQ(s.misnamed, 0u);
      expectLinkedNamesAgree(t, path);
      ++pairs;
    }
  }
  EXPECT_GE(pairs, 20u) << "fleet samples missing under " << root;
}

// The profiler file of another fleet sample: another process, whose ids
// (counted from 1 as in every process) mostly name other ops. Refused,
// naming the file, rather than lending its ProfilerStep as the original.
TEST(KinetoLinker, ProfilerFileOfAnotherRunIsRefused) {
  const std::string dir = std::string(ETB_SOURCE_DIR) + "/fleet_samples/";
  Trace t = readEtJson(dir + "mlp/mlp.et.json.gz");
  try {
    linkKineto(t, dir + "resnet18/resnet18.kineto.json.gz");
    ADD_FAILURE() << "linked mlp's trace to resnet18's profiler file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("resnet18.kineto.json.gz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("another run"), std::string::npos) << e.what();
  }
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
  // Nothing links, and a profiler file that times no operator is refused.
  EXPECT_THROW(linkKinetoText(t, R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": "184467440737095516150", "tid": 1,
     "ts": 1e300, "dur": 5, "args": {"External id": "99999999999999999999999",
     "Record function id": 1e30}}]})", "oversized.json"), InputError);
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
