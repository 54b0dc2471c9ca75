// SPDX-License-Identifier: MIT
//
// The ET JSON reader and writer on every public PyTorch ET in
// ../shared/traces: node counts against an independent parser, JSON -> JSON
// round trips, and the comm info the files are known to hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "core/pytorch_et/et_json_reader.h"
#include "core/pytorch_et/et_json_writer.h"
#include "core/base/file_io.h"
#include "core/model/trace_compare.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

std::vector<std::string> publicEts(const std::string& dir) {
  std::vector<std::string> out = {
      dir + "/param/linear_et.json.gz",
      dir + "/param/resnet_et.json.gz",
      dir + "/param/1.0.3-chakra.0.0.4/resnet_1gpu_et.json.gz",
      dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz",
      dir + "/param/at-fe2a39d0/resnet_et.json.gz",
      dir + "/param/pt2_et.json",
      dir + "/hta/benchmark_simple_add_et.json.gz",
  };
  for (const char* archive : {"/param/dlrm_pytorch_et.tar.gz", "/param/resnet_1gpu_et.json.tar.gz",
                              "/chakra/1.0.2-chakra.0.0.4.tgz"}) {
    for (const std::string& f : test::extractArchive(dir + archive)) {
      const std::string base = f.substr(f.find_last_of('/') + 1);
      // Skip macOS AppleDouble members ("._name.json").
      if (base.rfind("._", 0) != 0 && base.find(".json") != std::string::npos) out.push_back(f);
    }
  }
  return out;
}

size_t independentNodeCount(const std::string& path) {
  const auto doc = nlohmann::json::parse(readFileMaybeGzip(path));
  return doc.at("nodes").size();
}

std::string nameOf(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

TEST(EtJsonPublic, EveryTraceLoadsWithItsOwnNodeCount) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const auto files = publicEts(dir);
  ASSERT_GE(files.size(), 17u);  // 7 plain + 8 dlrm ranks + resnet_1gpu + chakra 1.0.2
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const Trace t = readEtJson(f);
    EXPECT_EQ(t.nodes.size(), independentNodeCount(f));
    EXPECT_TRUE(t.repairs.empty()) << t.repairs.front().what;
    EXPECT_TRUE(std::is_sorted(t.nodes.begin(), t.nodes.end(),
                               [](const Node& a, const Node& b) { return a.id < b.id; }));
    const size_t ops = std::count_if(t.nodes.begin(), t.nodes.end(),
                                     [](const Node& n) { return n.kind == NodeKind::kOperator; });
    EXPECT_GT(ops, 0u);
  }
}

TEST(EtJsonPublic, JsonRoundTripKeepsEverything) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  for (const std::string& f : publicEts(dir)) {
    SCOPED_TRACE(f);
    const Trace a = readEtJson(f);
    const Trace b = readEtJsonText(writeEtJsonText(a), "roundtrip:" + nameOf(f));
    EXPECT_EQ(diffTraces(a, b), "");
    EXPECT_EQ(a.comms.size(), b.comms.size());
    EXPECT_EQ(a.tensors.size(), b.tensors.size());
  }
}

std::map<std::string, int> commCounts(const Trace& t) {
  std::map<std::string, int> out;
  for (const CommInfo& c : t.comms) ++out[std::string(commTypeName(c.type))];
  return out;
}

TEST(EtJsonPublic, Resnet2gpuIsRank1Of2WithItsCollectives) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const Trace t = readEtJson(dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz");
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.world_size, 2);
  ASSERT_EQ(t.process_groups.size(), 1u);
  EXPECT_EQ(t.process_groups[0].name, "0");
  EXPECT_EQ(t.process_groups[0].desc, "default_pg");
  EXPECT_EQ(t.process_groups[0].ranks, (std::vector<int64_t>{0, 1}));
  // PROVENANCE: record_param_comms x27 = all_reduce x15 + broadcast x6 + the waits.
  EXPECT_EQ(t.comms.size(), 27u);
  const auto counts = commCounts(t);
  EXPECT_EQ(counts.at("all_reduce"), 15);
  EXPECT_EQ(counts.at("broadcast"), 6);
  EXPECT_EQ(counts.at("wait"), 6);
  EXPECT_EQ(t.iterations.size(), 3u);
  for (const CommInfo& c : t.comms) {
    if (c.type == CommType::kBroadcast) {
      EXPECT_EQ(c.root, 0);
      EXPECT_EQ(c.pg, 0);
      EXPECT_TRUE(c.is_async);  // each broadcast is waited on
      EXPECT_GT(c.in_elems, 0u);
    }
  }
}

TEST(EtJsonPublic, DlrmRanksHaveAllToAllvSplits) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::vector<std::string> ranks;
  for (const auto& f : test::extractArchive(dir + "/param/dlrm_pytorch_et.tar.gz")) {
    if (nameOf(f).rfind("dlrm_eg_", 0) == 0) ranks.push_back(f);
  }
  ASSERT_EQ(ranks.size(), 8u);
  for (const std::string& f : ranks) {
    SCOPED_TRACE(f);
    const Trace t = readEtJson(f);
    const int r = nameOf(f)[8] - '0';
    EXPECT_EQ(t.rank, r);
    EXPECT_EQ(t.world_size, 8);
    const auto counts = commCounts(t);
    EXPECT_EQ(counts.at("all_reduce"), 3);
    int a2av = 0;
    for (const CommInfo& c : t.comms) {
      if (c.type != CommType::kAllToAllV) continue;
      ++a2av;
      ASSERT_EQ(c.in_splits.size(), 8u);
      ASSERT_EQ(c.out_splits.size(), 8u);
      int64_t in_sum = 0;
      for (int64_t s : c.in_splits) in_sum += s;
      EXPECT_EQ(static_cast<uint64_t>(in_sum), c.in_elems);
      // Rank 2 waits on the all_to_allv with seq 147 and 152 only.
      if (r == 2) {
        EXPECT_EQ(c.is_async, c.seq == 147 || c.seq == 152) << c.seq;
      }
    }
    EXPECT_EQ(a2av, 4);
    EXPECT_EQ(counts.at("all_to_all"), 1);
    EXPECT_EQ(counts.at("wait"), 5);
    EXPECT_EQ(t.comms.size(), 13u);  // PROVENANCE: record_param_comms x13
  }
}

TEST(EtJsonPublic, Chakra102MapsBackendIdToItsGroup) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::string f;
  for (const auto& p : test::extractArchive(dir + "/chakra/1.0.2-chakra.0.0.4.tgz")) {
    if (nameOf(p) == "1.0.2-chakra.0.0.4.json") f = p;
  }
  ASSERT_FALSE(f.empty());
  const Trace t = readEtJson(f);
  EXPECT_EQ(t.world_size, 2);
  const auto counts = commCounts(t);
  EXPECT_EQ(counts.at("all_gather"), 10);
  for (const CommInfo& c : t.comms) {
    if (c.type == CommType::kAllGather) {
      EXPECT_EQ(c.pg, 0);
      EXPECT_EQ(c.out_elems, 2 * c.in_elems);
    }
  }
}

}  // namespace
}  // namespace etb::trace
