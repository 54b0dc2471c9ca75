// SPDX-License-Identifier: MIT
//
// et_convert's .et output as the simulators see it: every fleet sample,
// every public PyTorch ET and the 8-rank DLRM set pass the consumer rules
// (chakra_conformance.h); a data_deps-only feeder has one node ready at the
// start, no collective ready before the op that wrote its buffer, and a
// one-rank CPU chain finishes at the closed form sum of duration_micros.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/base/file_io.h"
#include "core/tools/convert_run.h"
#include "core/trace_io.h"
#include "tests/core/chakra_conformance.h"
#include "tests/test_util.h"

namespace etb::test {
namespace {

const std::string kConvert = ETB_BINARY_DIR "/core/et_convert";
const std::string kFleet = ETB_SOURCE_DIR "/fleet_samples";

std::string q(const std::string& s) { return "'" + s + "'"; }

// Runs et_convert; returns its output (stdout + stderr), failing the test on
// a non-zero exit.
std::string convert(const std::string& args) {
  std::string out;
  const int rc = runCommand(kConvert + " " + args, &out);
  EXPECT_EQ(rc, 0) << args << "\n" << out;
  return out;
}

void expectConforms(const std::string& et) {
  const Conformance c = checkChakraFile(et);
  EXPECT_TRUE(c.violations.empty()) << et << ": " << c.summary();
  EXPECT_FALSE(c.nodes.empty()) << et;
}

// A data_deps-only feeder (Chakra's classic one) with ASTRA-sim's lanes: one
// CPU op, one GPU compute op and one comm op in flight, ready nodes issued
// lowest id first. Returns the finish time in microseconds.
uint64_t simulate(const std::vector<SimNode>& nodes) {
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].id] = i;
  std::vector<size_t> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (uint64_t d : nodes[i].data_deps) {
      users[index.at(d)].push_back(i);
      ++pending[i];
    }
  }
  auto lane = [&](size_t i) { return nodes[i].type >= 5 ? 2 : nodes[i].is_cpu_op ? 0 : 1; };
  std::set<std::pair<uint64_t, size_t>> ready[3];
  bool busy[3] = {false, false, false};
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (pending[i] == 0) ready[lane(i)].insert({nodes[i].id, i});
  }
  using Ev = std::pair<uint64_t, size_t>;  // finish time, node
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> events;
  uint64_t now = 0;
  size_t done = 0;
  while (true) {
    for (int l = 0; l < 3; ++l) {
      if (busy[l] || ready[l].empty()) continue;
      const size_t i = ready[l].begin()->second;
      ready[l].erase(ready[l].begin());
      busy[l] = true;
      events.push({now + nodes[i].duration_micros, i});
    }
    if (events.empty()) break;
    const auto [t, i] = events.top();
    events.pop();
    now = t;
    busy[lane(i)] = false;
    ++done;
    for (size_t u : users[i]) {
      if (--pending[u] == 0) ready[lane(u)].insert({nodes[u].id, u});
    }
  }
  EXPECT_EQ(done, nodes.size()) << "nodes never became ready";
  return now;
}

// Nodes a data_deps-only feeder can start at time zero.
std::vector<uint64_t> readyAtStart(const std::vector<SimNode>& nodes) {
  std::vector<uint64_t> out;
  for (const SimNode& n : nodes) {
    if (n.data_deps.empty()) out.push_back(n.id);
  }
  return out;
}

// Every node `id` transitively waits for through data_deps.
std::set<uint64_t> ancestors(const std::vector<SimNode>& nodes, uint64_t id) {
  std::unordered_map<uint64_t, const SimNode*> by_id;
  for (const SimNode& n : nodes) by_id[n.id] = &n;
  std::set<uint64_t> seen;
  std::vector<uint64_t> stack{id};
  while (!stack.empty()) {
    const SimNode* n = by_id.at(stack.back());
    stack.pop_back();
    for (uint64_t d : n->data_deps) {
      if (seen.insert(d).second) stack.push_back(d);
    }
  }
  return seen;
}

TEST(ChakraForSimulators, EveryFleetSampleConforms) {
  const std::string dir = makeTempDir("fleet_et");
  for (const char* s : {"mlp", "resnet18", "transformer", "dlrm"}) {
    const std::string et = dir + "/" + s + ".et";
    convert(q(kFleet + "/" + s + "/" + s + ".et.json.gz") + " " + q(et) + " --kineto " +
            q(kFleet + "/" + s + "/" + s + ".kineto.json.gz"));
    expectConforms(et);
  }
  const std::string out = convert(q(kFleet + "/ddp2/ddp2.rank%d.et.json.gz") + " " + q(dir + "/ddp2"));
  std::set<std::string> pgs;
  for (int r = 0; r < 2; ++r) {
    const Conformance c = checkChakraFile(dir + "/ddp2." + std::to_string(r) + ".et");
    EXPECT_TRUE(c.violations.empty()) << c.summary();
    pgs.insert(c.pg_names.begin(), c.pg_names.end());
  }
  EXPECT_FALSE(pgs.empty());  // DDP's all-reduce names its group
  const std::string groups = readFileMaybeGzip(dir + "/ddp2.comm_group.json");
  const auto v = checkCommGroups(groups, pgs, 2);
  EXPECT_TRUE(v.empty()) << groups << (v.empty() ? "" : v[0].what);
  EXPECT_NE(out.find("--comm-group-configuration=" + dir + "/ddp2.comm_group.json"), std::string::npos) << out;
  EXPECT_NE(out.find("--workload-configuration=" + dir + "/ddp2 "), std::string::npos) << out;
}

std::vector<std::string> publicPyTorchEts(const std::string& dir) {
  std::vector<std::string> files;
  for (const std::string& f : listFiles(dir, {".json.gz", ".json"})) {
    if (f.find("kineto") == std::string::npos && f.find("_trace.json") == std::string::npos &&
        f.find("comm_group") == std::string::npos) {
      files.push_back(f);
    }
  }
  for (const char* archive : {"/param/dlrm_pytorch_et.tar.gz", "/chakra/1.0.2-chakra.0.0.4.tgz",
                              "/param/resnet_1gpu_et.json.tar.gz"}) {
    for (const std::string& f : extractArchive(dir + archive)) {
      if (f.find("/._") == std::string::npos) files.push_back(f);
    }
  }
  return files;
}

TEST(ChakraForSimulators, EveryPublicPyTorchEtConforms) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::string tmp = makeTempDir("public_et");
  size_t checked = 0;
  for (const std::string& f : publicPyTorchEts(dir)) {
    if (trace::detectFileKind(f) != trace::FileKind::kPyTorchEt) continue;
    const std::string et = tmp + "/" + std::to_string(checked++) + ".et";
    convert(q(f) + " " + q(et));
    SCOPED_TRACE(f);
    expectConforms(et);
    EXPECT_EQ(readyAtStart(checkChakraFile(et).nodes).size(), 1u);
  }
  EXPECT_GE(checked, 10u);
  // The one public GPU pair that links: its kernels become GPU nodes.
  const std::string et = tmp + "/hta.et";
  const std::string out = convert(q(dir + "/hta/benchmark_simple_add_et.json.gz") + " " + q(et) +
                                  " --kineto " + q(dir + "/hta/benchmark_simple_add_trace.json.gz"));
  EXPECT_NE(out.find(", 4 GPU kernels)"), std::string::npos) << out;
  expectConforms(et);
}

TEST(ChakraForSimulators, EightRankDlrmSetConformsWithItsGroups) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::vector<std::string> files = extractArchive(dir + "/param/dlrm_pytorch_et.tar.gz");
  ASSERT_FALSE(files.empty());
  const std::string in = files[0].substr(0, files[0].find_last_of('/')) + "/dlrm_eg_%d.json";
  const std::string tmp = makeTempDir("dlrm8");
  const std::string out = convert(q(in) + " " + q(tmp + "/dlrm"));
  EXPECT_NE(out.find("8 ranks"), std::string::npos) << out;
  EXPECT_NE(out.find("npus_count must multiply to 8"), std::string::npos) << out;
  std::set<std::string> pgs;
  size_t colls = 0;
  for (int r = 0; r < 8; ++r) {
    const Conformance c = checkChakraFile(tmp + "/dlrm." + std::to_string(r) + ".et");
    EXPECT_TRUE(c.violations.empty()) << r << ": " << c.summary();
    pgs.insert(c.pg_names.begin(), c.pg_names.end());
    for (const SimNode& n : c.nodes) colls += n.type == 7 ? 1 : 0;
  }
  EXPECT_GE(colls, 8u * 8u);  // 5 all_to_all + 3 all_reduce per rank (PROVENANCE.md)
  if (!pgs.empty()) {
    const auto v = checkCommGroups(readFileMaybeGzip(tmp + "/dlrm.comm_group.json"), pgs, 8);
    EXPECT_TRUE(v.empty());
  }
}

void storages(const trace::Trace& t, const std::vector<trace::Value>& vals, std::set<uint64_t>* out) {
  for (const trace::Value& v : vals) {
    if (v.kind == trace::ValueKind::kTensor) {
      const trace::TensorRef& r = t.tensors[v.tensor];
      out->insert(r.storage_id != 0 ? r.storage_id : r.tensor_id);
    }
    storages(t, v.items, out);
  }
}

// The op that last wrote a buffer the collective `id` sends, found in the
// source trace: the simulator must not start the collective before it.
uint64_t producerOf(const trace::Trace& t, uint64_t id) {
  std::set<uint64_t> ins;
  storages(t, t.find(id)->inputs, &ins);
  ins.erase(0);
  uint64_t producer = 0;
  for (const trace::Node& n : t.nodes) {
    if (n.id >= id) break;
    std::set<uint64_t> outs;
    storages(t, n.outputs, &outs);
    for (uint64_t s : outs) {
      if (ins.count(s) != 0) producer = n.id;
    }
  }
  return producer;
}

// Checks the feeder's view of one converted file against its source trace.
size_t checkOrder(const std::string& source, const std::string& et) {
  SCOPED_TRACE(et);
  const Conformance c = checkChakraFile(et);
  EXPECT_TRUE(c.violations.empty()) << c.summary();
  std::map<int64_t, uint64_t> first_of_thread;
  for (const SimNode& n : c.nodes) {
    auto it = first_of_thread.emplace(n.tid, n.id).first;
    it->second = std::min(it->second, n.id);
  }
  const std::vector<uint64_t> ready = readyAtStart(c.nodes);
  EXPECT_EQ(ready.size(), 1u);
  for (uint64_t id : ready) {
    const auto n = std::find_if(c.nodes.begin(), c.nodes.end(), [&](const SimNode& x) { return x.id == id; });
    EXPECT_EQ(first_of_thread.at(n->tid), id) << "node " << id << " is ready but not first of its thread";
  }
  const trace::Trace t = trace::readTrace(source);
  size_t checked = 0;
  for (const SimNode& n : c.nodes) {
    if (n.type != 7) continue;
    const uint64_t producer = producerOf(t, n.id);
    if (producer == 0) continue;
    EXPECT_EQ(ancestors(c.nodes, n.id).count(producer), 1u)
        << "collective " << n.id << " can start before " << producer << " wrote its buffer";
    ++checked;
  }
  return checked;
}

TEST(ChakraForSimulators, FeederReadySetFollowsThreadsAndProducers) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::string tmp = makeTempDir("ready");
  size_t collectives = 0;
  for (const std::string& src : {kFleet + "/mlp/mlp.et.json.gz", kFleet + "/resnet18/resnet18.et.json.gz",
                                 dir + "/param/resnet_et.json.gz"}) {
    const std::string et = tmp + "/" + std::to_string(collectives) + "_" + std::to_string(src.size()) + ".et";
    convert(q(src) + " " + q(et));
    collectives += checkOrder(src, et);
  }
  convert(q(kFleet + "/ddp2/ddp2.rank%d.et.json.gz") + " " + q(tmp + "/ddp2"));
  for (int r = 0; r < 2; ++r) {
    collectives += checkOrder(kFleet + "/ddp2/ddp2.rank" + std::to_string(r) + ".et.json.gz",
                              tmp + "/ddp2." + std::to_string(r) + ".et");
  }
  EXPECT_GE(collectives, 10u);  // resnet's all_reduces and DDP's
}

uint64_t sumDurations(const std::vector<SimNode>& nodes) {
  uint64_t sum = 0;
  for (const SimNode& n : nodes) sum += n.duration_micros;
  return sum;
}

TEST(ChakraForSimulators, OneRankChainFinishesAtTheSumOfItsDurations) {
  const std::string tmp = makeTempDir("chain");
  for (const char* s : {"mlp", "resnet18", "transformer"}) {
    const std::string et = tmp + "/" + s + ".et";
    convert(q(kFleet + "/" + s + "/" + s + ".et.json.gz") + " " + q(et) + " --kineto " +
            q(kFleet + "/" + s + "/" + s + ".kineto.json.gz"));
    const Conformance c = checkChakraFile(et);
    const uint64_t sum = sumDurations(c.nodes);
    EXPECT_GT(sum, 0u) << s;
    EXPECT_EQ(simulate(c.nodes), sum) << s;
  }
}

// Sum of the exclusive times of the profiler's host events that belong to
// the ET (by "Record function id"), from the two JSON files alone.
double profilerExclusiveSum(const std::string& et_json, const std::string& kineto, size_t* threads) {
  std::set<int64_t> rf;
  const nlohmann::json et = nlohmann::json::parse(readFileMaybeGzip(et_json));
  for (const auto& n : et.at("nodes")) {
    if (n.contains("rf_id")) rf.insert(n.at("rf_id").get<int64_t>());  // 1.0.1 layout
    for (const auto& a : n.value("attrs", nlohmann::json::array())) {
      if (a.at("name") == "rf_id") rf.insert(a.at("value").get<int64_t>());
    }
  }
  struct Ev { double ts, dur; };
  std::map<int64_t, std::vector<Ev>> by_tid;
  std::set<int64_t> seen;
  const nlohmann::json profile = nlohmann::json::parse(readFileMaybeGzip(kineto));
  for (const auto& e : profile.at("traceEvents")) {
    if (e.value("ph", "") != "X" || !e.contains("args") || !e["args"].contains("Record function id")) continue;
    const int64_t id = e["args"]["Record function id"].get<int64_t>();
    if (rf.count(id) == 0 || !seen.insert(id).second) continue;
    by_tid[e.at("tid").get<int64_t>()].push_back({e.at("ts").get<double>(), e.at("dur").get<double>()});
  }
  double sum = 0;
  for (auto& [tid, evs] : by_tid) {
    std::sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts || (a.ts == b.ts && a.dur > b.dur); });
    std::vector<std::pair<double, double>> stack;  // end, time left for exclusive
    std::vector<double> excl;
    auto pop = [&]() { sum += std::max(0.0, stack.back().second); stack.pop_back(); };
    for (const Ev& e : evs) {
      while (!stack.empty() && stack.back().first <= e.ts) pop();
      if (!stack.empty()) stack.back().second -= e.dur;
      stack.push_back({e.ts + e.dur, e.dur});
    }
    while (!stack.empty()) pop();
  }
  *threads = by_tid.size();
  return sum;
}

TEST(ChakraForSimulators, KinetoDurationsAreTheProfilersExclusiveTimes) {
  const std::string tmp = makeTempDir("kineto");
  for (const char* s : {"mlp", "resnet18", "transformer", "dlrm"}) {
    const std::string base = kFleet + "/" + s + "/" + s;
    const std::string et = tmp + "/" + s + ".et";
    const std::string out = convert(q(base + ".et.json.gz") + " " + q(et) + " --kineto " + q(base + ".kineto.json.gz"));
    EXPECT_NE(out.find("linked "), std::string::npos) << out;
    size_t threads = 0;
    const double want = profilerExclusiveSum(base + ".et.json.gz", base + ".kineto.json.gz", &threads);
    const double got = static_cast<double>(sumDurations(checkChakraFile(et).nodes));
    EXPECT_GT(want, 0) << s;
    EXPECT_NEAR(got, want, 0.5 * static_cast<double>(threads) + 1e-6) << s;
  }
}

TEST(ChakraForSimulators, EveryPublicChakraFileConformsAfterConversion) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::vector<std::string> files = listFiles(dir, {".et"});
  for (const std::string& f : extractArchive(dir + "/astra-sim/at-bd321122/resnet_dp.tar")) {
    if (f.find("resnet_dp.0.et") != std::string::npos) files.push_back(f);
  }
  const std::string tmp = makeTempDir("public_chakra");
  size_t n = 0;
  for (const std::string& f : files) {
    const std::string et = tmp + "/" + std::to_string(n++) + ".et";
    convert(q(f) + " " + q(et));
    SCOPED_TRACE(f);
    expectConforms(et);
  }
  EXPECT_GE(n, 20u);
}

TEST(ChakraForSimulators, SetTooBigToHoldIsReadTwiceWithTheSameResult) {
  const std::string tmp = makeTempDir("twice");
  std::ostringstream log;
  tools::ConvertOptions o;
  o.in = kFleet + "/ddp2/ddp2.rank%d.et.json.gz";
  o.out = tmp + "/held";
  tools::runConvert(o, log);
  o.out = tmp + "/reread";
  o.keep_bytes = 0;  // nothing held: every rank is read again to be written
  tools::runConvert(o, log);
  for (const char* r : {".0.et", ".1.et"}) {
    EXPECT_EQ(readFileMaybeGzip(tmp + "/held" + r), readFileMaybeGzip(tmp + "/reread" + r)) << r;
  }
  EXPECT_EQ(readFileMaybeGzip(tmp + "/held.comm_group.json"), readFileMaybeGzip(tmp + "/reread.comm_group.json"));
}

TEST(ChakraForSimulators, KinetoOfAnotherRunIsRefused) {
  const std::string tmp = makeTempDir("kineto_bad");
  std::string out;
  const std::string other = kFleet + "/resnet18/resnet18.kineto.json.gz";
  EXPECT_EQ(runCommand(kConvert + " " + q(kFleet + "/mlp/mlp.et.json.gz") + " " + q(tmp + "/x.et") +
                           " --kineto " + q(other), &out), 2) << out;
  EXPECT_NE(out.find(other), std::string::npos) << out;
  EXPECT_NE(out.find("another run"), std::string::npos) << out;
}

TEST(ChakraForSimulators, OutputFolderThatDoesNotExistIsNamed) {
  const std::string tmp = makeTempDir("nofolder");
  std::string out;
  EXPECT_EQ(runCommand(kConvert + " " + q(kFleet + "/ddp2/ddp2.rank%d.et.json.gz") + " " +
                           q(tmp + "/missing/ddp2"), &out), 2) << out;
  EXPECT_NE(out.find("output folder '" + tmp + "/missing' does not exist"), std::string::npos) << out;
}

}  // namespace
}  // namespace etb::test
