// SPDX-License-Identifier: MIT
#include "core/tools/trace_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base/file_io.h"
#include "core/base/progress.h"
#include "core/trace_io.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

// A small trace built by hand: the summary must count exactly this.
Trace handBuiltTrace() {
  Trace t;
  t.path = "hand.json";
  t.format = SourceFormat::kPyTorchEtJson;
  t.schema = "1.1.1-chakra.0.0.4";
  t.rank = 1;
  t.world_size = 2;
  auto add = [&](NodeId id, const char* name, NodeKind kind, double dur) {
    Node n;
    n.id = id;
    n.name = t.strings.intern(name);
    n.kind = kind;
    n.dur_us = dur;
    t.nodes.push_back(n);
    return t.nodes.size() - 1;
  };
  add(1, "[pytorch|profiler|execution_trace|process]", NodeKind::kRoot, -1);
  add(2, "ProfilerStep#7", NodeKind::kMarker, 100);
  add(3, "aten::mm", NodeKind::kOperator, 10);
  add(4, "aten::mm", NodeKind::kOperator, 20);
  add(5, "aten::add", NodeKind::kOperator, -1);
  add(6, "aten::relu", NodeKind::kOperator, 50);
  const size_t coll = add(7, "record_param_comms", NodeKind::kCollective, -1);
  CommInfo c;
  c.type = CommType::kAllReduce;
  c.dtype = DType::kFloat;
  c.in_elems = c.out_elems = 1000;
  t.comms.push_back(c);
  t.nodes[coll].comm = 0;
  const size_t gather = add(8, "record_param_comms", NodeKind::kCollective, -1);
  c.type = CommType::kAllGather;
  c.bytes = 12345;  // a recorded size wins over elements x dtype
  t.comms.push_back(c);
  t.nodes[gather].comm = 1;
  ProcessGroup pg;
  pg.name = "0";
  pg.desc = "default_pg";
  pg.ranks = {0, 1};
  pg.size = 2;
  t.process_groups.push_back(pg);
  for (int i = 0; i < 7; ++i) t.repairs.push_back({static_cast<NodeId>(i + 1), "fixed"});
  t.finalize();
  return t;
}

TEST(TraceSummary, CountsAHandBuiltTrace) {
  const Trace t = handBuiltTrace();
  const TraceSummary s = summarizeTrace(t, /*top_n=*/2, /*max_repairs=*/3);
  EXPECT_EQ(s.nodes, 8u);
  EXPECT_EQ(s.operators, 4u);
  EXPECT_EQ(s.distinct_operators, 3u);
  EXPECT_EQ(s.timed_operators, 3u);
  EXPECT_DOUBLE_EQ(s.linkedPercent(), 75.0);
  ASSERT_EQ(s.top_by_count.size(), 2u);
  EXPECT_EQ(s.top_by_count[0].name, "aten::mm");
  EXPECT_EQ(s.top_by_count[0].count, 2u);
  ASSERT_EQ(s.top_by_time.size(), 2u);
  EXPECT_EQ(s.top_by_time[0].name, "aten::relu");
  EXPECT_DOUBLE_EQ(s.top_by_time[1].total_us, 30.0);
  ASSERT_EQ(s.collectives.size(), 2u);
  EXPECT_EQ(s.collectives[0].type, "all_reduce");
  EXPECT_EQ(s.collectives[0].bytes, 4000u);
  EXPECT_EQ(s.collectives[1].type, "all_gather");
  EXPECT_EQ(s.collectives[1].bytes, 12345u);
  // The one ProfilerStep#7 marker built above (node 2, 100 us), not what
  // finalize() found.
  ASSERT_EQ(s.iterations.size(), 1u);
  EXPECT_EQ(s.iterations[0].name, "ProfilerStep#7");
  EXPECT_EQ(s.iterations[0].marker, 2u);
  EXPECT_EQ(s.repair_count, 7u);
  EXPECT_EQ(s.first_repairs.size(), 3u);
}

TEST(TraceSummary, JsonAndTextCarryTheSameFacts) {
  const TraceSummary s = summarizeTrace(handBuiltTrace());
  const nlohmann::json j = summaryToJson(s);
  EXPECT_EQ(j.at("schema"), "1.1.1-chakra.0.0.4");
  EXPECT_EQ(j.at("rank"), 1);
  EXPECT_EQ(j.at("world_size"), 2);
  EXPECT_EQ(j.at("nodes_by_kind").at("operator"), 4);
  EXPECT_EQ(j.at("process_groups").at(0).at("ranks"), nlohmann::json({0, 1}));
  EXPECT_EQ(j.at("repairs").at("count"), 7);
  // Round-trips through text: the tool prints dump() and users parse it.
  EXPECT_EQ(nlohmann::json::parse(j.dump()), j);

  std::ostringstream os;
  printSummary(s, os);
  const std::string text = os.str();
  for (const char* want : {"schema:     1.1.1-chakra.0.0.4", "rank:       1 of 2",
                           "# top operators by time", "all_reduce", "default_pg",
                           "# repairs: 7", "... 2 more"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\nin:\n" << text;
  }
}

// Counts taken straight from the file with nlohmann, not from our reader.
TEST(TraceSummary, MatchesIndependentCountsOnRealTrace) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::string path = dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz";
  const nlohmann::json file = nlohmann::json::parse(readFileMaybeGzip(path));
  std::map<std::string, size_t> by_name;
  std::map<std::string, size_t> colls;
  std::map<std::string, uint64_t> coll_bytes;
  size_t steps = 0;
  for (const auto& n : file.at("nodes")) {
    const std::string name = n.at("name");
    ++by_name[name];
    if (name.rfind("ProfilerStep#", 0) == 0) ++steps;
    if (name != "record_param_comms") continue;
    std::map<std::string, nlohmann::json> attrs;
    for (const auto& a : n.at("attrs")) attrs[a.at("name")] = a.at("value");
    const std::string type = attrs.at("collective_name");
    ++colls[type];
    const std::map<std::string, uint64_t> kSize{{"Float", 4}, {"Long", 8}, {"Int", 4},
                                                {"Double", 8}, {"Half", 2}, {"Byte", 1}};
    const uint64_t size = kSize.at(attrs.at("dtype").get<std::string>());
    const uint64_t in = attrs.at("in_msg_nelems").get<uint64_t>();
    const uint64_t out = attrs.at("out_msg_nelems").get<uint64_t>();
    coll_bytes[type] += size * std::max(in, out);
  }
  const TraceSummary s = summarizeTrace(readTrace(path), 10);
  EXPECT_EQ(s.nodes, file.at("nodes").size());
  EXPECT_EQ(s.schema, "1.1.0-chakra.0.0.4");
  EXPECT_EQ(s.iterations.size(), steps);
  ASSERT_FALSE(s.top_by_count.empty());
  EXPECT_EQ(s.top_by_count[0].name, "aten::empty");  // the file's most common op
  for (const OpStat& op : s.top_by_count) EXPECT_EQ(op.count, by_name[op.name]) << op.name;
  std::map<std::string, CollectiveStat> got;
  for (const CollectiveStat& c : s.collectives) got[c.type] = c;
  EXPECT_EQ(got["all_reduce"].count, colls["allreduce"]);
  EXPECT_EQ(got["all_reduce"].bytes, coll_bytes["allreduce"]);
  EXPECT_EQ(got["broadcast"].count, colls["broadcast"]);
  EXPECT_EQ(got["broadcast"].bytes, coll_bytes["broadcast"]);
  ASSERT_FALSE(s.process_groups.empty());
  EXPECT_EQ(s.process_groups[0].desc, "default_pg");
}

TEST(ProgressBar, DrawsOnlyWhereToldAndClearsItsLine) {
  std::ostringstream os;
  {
    ProgressBar bar("reading x", &os);
    auto cb = bar.callback();
    ASSERT_TRUE(cb);
    cb(50, 100);
    cb(100, 100);  // completion always draws, throttle or not
  }
  const std::string out = os.str();
  EXPECT_NE(out.find("reading x ["), std::string::npos);
  EXPECT_NE(out.find(" 50%"), std::string::npos);
  EXPECT_NE(out.find("100%"), std::string::npos);
  EXPECT_EQ(out.substr(out.size() - 4), "\r\x1b[K");  // erased at the end

  ProgressBar quiet("reading y", nullptr);
  EXPECT_FALSE(quiet.enabled());
  EXPECT_FALSE(quiet.callback());  // readers skip progress work entirely
}

}  // namespace
}  // namespace etb::trace
