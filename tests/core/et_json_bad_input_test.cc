// SPDX-License-Identifier: MIT
//
// The ET JSON reader on broken input: what it repairs (and records), what it
// rejects (InputError naming the file and node), never a crash or a hang.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/base/error.h"
#include "core/pytorch_et/et_json_reader.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

// A 1.0.1 flat node; `extra` is spliced in verbatim (may be invalid JSON).
std::string flat(uint64_t id, const std::string& name, uint64_t parent,
                 const std::string& op_schema = "", uint64_t tid = 1,
                 const std::string& inputs = "[]", const std::string& types = "[]",
                 const std::string& shapes = "[]") {
  return "{\"name\": \"" + name + "\", \"id\": " + std::to_string(id) +
         ", \"rf_id\": 0, \"parent\": " + std::to_string(parent) +
         ", \"fw_parent\": 0, \"seq_id\": -1, \"scope\": 0, \"tid\": " + std::to_string(tid) +
         ", \"fw_tid\": 0, \"op_schema\": \"" + op_schema + "\", \"inputs\": " + inputs +
         ", \"input_shapes\": " + shapes + ", \"input_types\": " + types +
         ", \"outputs\": [], \"output_shapes\": [], \"output_types\": []}";
}

std::string roots() {
  return flat(2, "[pytorch|profiler|execution_trace|thread]", 1) + ",\n" +
         flat(1, "[pytorch|profiler|execution_trace|process]", 1);
}

std::string doc(const std::string& nodes, const std::string& schema = "1.0.1") {
  return "{\"schema\": \"" + schema + "\", \"pid\": 7, \"time\": \"2024-01-01 00:00:00\", "
         "\"start_ts\": 1, \"nodes\": [\n" + nodes + "\n], \"finish_ts\": 2}";
}

std::string writeTemp(const std::string& text) {
  static const std::string dir = test::makeTempDir("etjson_bad");
  static int n = 0;
  const std::string path = dir + "/t" + std::to_string(n++) + ".json";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Reads `text` from a file and returns the InputError it must raise.
InputError errorOf(const std::string& text, bool strict = false) {
  const std::string path = writeTemp(text);
  ReadOptions o;
  o.strict = strict;
  try {
    readEtJson(path, o);
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().file, path);
    return e;
  }
  ADD_FAILURE() << "no InputError for:\n" << text.substr(0, 300);
  return InputError(SourceLoc{}, "none");
}

TEST(EtJsonBadInput, GoodSyntheticTraceLoadsWithoutRepairs) {
  const Trace t = readEtJsonText(doc(flat(3, "aten::relu", 2, "aten::relu(Tensor self) -> Tensor") +
                                     ",\n" + roots()), "good");
  EXPECT_EQ(t.nodes.size(), 3u);
  EXPECT_TRUE(t.repairs.empty());
  EXPECT_EQ(t.nodes[2].kind, NodeKind::kOperator);
  EXPECT_EQ(t.nodes[0].kind, NodeKind::kRoot);
}

// torch 1.13's observer on nested tensors (nn.TransformerEncoder's fast path
// with a padding mask, recorded by fleet_samples/wild_models.py wild_nested):
// ops written with id 0, parent 0 and a truncated argument list, several per
// trace. They used to stop the read ("duplicate node id 0"); now they are
// dropped and counted, the rest of the trace intact.
TEST(EtJsonBadInput, IdZeroNodesOfNestedTensorOpsAreDroppedAndCounted) {
  const std::string pad = "aten::to_padded_tensor(Tensor self, float padding, int[]? output_size=None) -> Tensor";
  const std::string text = doc(flat(3, "aten::relu", 2, "aten::relu(Tensor self) -> Tensor") + ",\n" +
                               flat(0, "aten::to_padded_tensor", 0, pad) + ",\n" +
                               flat(0, "aten::to_padded_tensor", 0, pad) + ",\n" + roots());
  const Trace t = readEtJsonText(text, "nested");
  ASSERT_EQ(t.nodes.size(), 3u);
  for (const Node& n : t.nodes) EXPECT_NE(n.id, 0u);
  ASSERT_EQ(t.repairs.size(), 1u);
  EXPECT_NE(t.repairs[0].what.find("2 node(s) with id 0 dropped"), std::string::npos) << t.repairs[0].what;
  errorOf(text, /*strict=*/true);
}

TEST(EtJsonBadInput, TruncatedTailIsCutBackAndRecorded) {
  const std::string full = doc(flat(3, "a", 2) + ",\n" + flat(4, "b", 2) + ",\n" + roots());
  const std::string cut = full.substr(0, full.find("\"id\": 4") + 12);  // mid node 4
  const Trace t = readEtJsonText(cut, "cut");
  ASSERT_EQ(t.nodes.size(), 1u);  // node 3 survives, node 4 was incomplete
  EXPECT_EQ(t.nodes[0].id, 3u);
  ASSERT_FALSE(t.repairs.empty());
  EXPECT_NE(t.repairs[0].what.find("truncated"), std::string::npos);
  // Node 3's parent (thread root 2) was never written: recorded too.
  EXPECT_EQ(t.nodes[0].parent, 0u);
  EXPECT_EQ(t.repairs.back().node_id, 3u);
  const InputError e = errorOf(cut, /*strict=*/true);
  EXPECT_GT(e.loc().line, 0u);
}

TEST(EtJsonBadInput, MalformedBeyondRepairNamesFileAndLine) {
  EXPECT_EQ(errorOf("").loc().node_id, SourceLoc::kNoNode);
  EXPECT_EQ(errorOf("this is not json").loc().node_id, SourceLoc::kNoNode);
  EXPECT_GT(errorOf("{\"schema\": \"1.0.1\",\n\"pid\": 12abc, \"nodes\": []}").loc().line, 0u);
  EXPECT_EQ(errorOf("\n\n@@@ {").loc().node_id, SourceLoc::kNoNode);  // repairs to {}: no schema
  errorOf("[1, 2, 3]");  // valid JSON, not an ET
  errorOf("\x1f\x8b garbage that claims to be gzip");
}

TEST(EtJsonBadInput, WrongTypesAreErrorsNamingTheNode) {
  const InputError bad_id = errorOf(doc("{\"name\": \"x\", \"id\": \"abc\", \"parent\": 1}"));
  EXPECT_EQ(bad_id.loc().node_id, SourceLoc::kNoNode);
  EXPECT_EQ(bad_id.loc().node_name, "x");
  errorOf("{\"schema\": \"1.0.1\", \"nodes\": {}}");
  errorOf("{\"schema\": 101, \"nodes\": []}");
  errorOf(doc("17"));
  const std::string bad_attr = doc(
      "{\"id\": 9, \"name\": \"n\", \"ctrl_deps\": 1, \"inputs\": {\"values\": [], \"shapes\": [], "
      "\"types\": []}, \"outputs\": {\"values\": [], \"shapes\": [], \"types\": []}, \"attrs\": "
      "[{\"name\": \"rf_id\", \"type\": \"uint64\", \"value\": \"x\"}]}",
      "1.0.2-chakra.0.0.4");
  const InputError e = errorOf(bad_attr);
  EXPECT_EQ(e.loc().node_id, 9u);
  EXPECT_GT(e.loc().line, 0u);
  const InputError tensor = errorOf(doc(
      flat(5, "aten::relu", 2, "s", 1, "[[1, 2, 3]]", "[\"Tensor(float)\"]", "[[4]]") + "," + roots()));
  EXPECT_EQ(tensor.loc().node_id, 5u);
}

TEST(EtJsonBadInput, UnknownSchemaIsRejected) {
  errorOf(doc(roots(), "2.0.0"));
  errorOf(doc(roots(), "1.2.0-chakra.0.0.4"));
  errorOf("{\"nodes\": []}");
  for (const char* ok : {"1.0.0", "1.0.4-chakra.0.0.4", "1.1.1-chakra.1.0.0"}) {
    EXPECT_NO_THROW(readEtJsonText(doc(roots(), ok), ok));
  }
}

TEST(EtJsonBadInput, DuplicateIdsAndCyclesNameTheNode) {
  const InputError dup = errorOf(doc(flat(3, "a", 2) + "," + flat(3, "b", 2) + "," + roots()));
  EXPECT_EQ(dup.loc().node_id, 3u);
  const InputError cycle = errorOf(doc(flat(3, "a", 4) + "," + flat(4, "b", 3) + "," + roots()));
  EXPECT_TRUE(cycle.loc().node_id == 3u || cycle.loc().node_id == 4u);
}

TEST(EtJsonBadInput, UnescapedStringsAreRepaired) {
  // 1.0.x writes strings raw: a newline, a quote and a lone backslash.
  const std::string raw = doc(flat(3, "my \"quoted\" label", 2, "C:\\path\nnext") + ",\n" + roots());
  const Trace t = readEtJsonText(raw, "raw");
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.name(t.nodes[2]), "my \"quoted\" label");
  EXPECT_EQ(t.str(t.nodes[2].op_schema), "C:\\path\nnext");
  ASSERT_EQ(t.repairs.size(), 1u);
  EXPECT_EQ(t.repairs[0].node_id, 0u);
  EXPECT_NE(t.repairs[0].what.find("repaired JSON"), std::string::npos);
  EXPECT_GT(errorOf(raw, /*strict=*/true).loc().line, 0u);
}

TEST(EtJsonBadInput, StrayAndMissingCommasAreRepaired) {
  const std::string text = doc(flat(3, "a", 2) + ",," + flat(4, "b", 2) + "\n" + roots() + ",");
  const Trace t = readEtJsonText(text, "commas");
  EXPECT_EQ(t.nodes.size(), 4u);
  EXPECT_EQ(t.repairs.size(), 1u);
}

TEST(EtJsonBadInput, DanglingParentIsReparentedToItsThreadRoot) {
  const std::string text = doc(flat(5, "orphan", 99) + "," + roots());
  const Trace t = readEtJsonText(text, "dangling");
  const Node* n = t.find(5);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->parent, 2u);
  ASSERT_EQ(t.repairs.size(), 1u);
  EXPECT_EQ(t.repairs[0].node_id, 5u);
  EXPECT_EQ(errorOf(text, /*strict=*/true).loc().node_id, 5u);
}

TEST(EtJsonBadInput, CutOffProcessGroupConfigKeepsCompleteGroups) {
  const std::string pg =
      "\"[{\\\"pg_name\\\": \\\"0\\\", \\\"pg_desc\\\": \\\"default_pg\\\", \\\"ranks\\\": [], "
      "\\\"group_size\\\": 4}, {\\\"pg_name\\\": \\\"1\\\", \\\"ranks\\\": [0, 2\"";
  const Trace t = readEtJsonText(
      doc(flat(3, "## process_group:init ##", 2, "", 1, "[" + pg + "]", "[\"String\"]", "[[]]") + "," +
          roots()), "pg");
  ASSERT_EQ(t.process_groups.size(), 1u);
  EXPECT_EQ(t.process_groups[0].ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(t.world_size, 4);
  ASSERT_EQ(t.repairs.size(), 1u);
  EXPECT_EQ(t.repairs[0].node_id, 3u);
}

TEST(EtJsonBadInput, ProgressReachesTheEnd) {
  size_t last = 0, total = 0, calls = 0;
  ReadOptions o;
  o.progress = [&](size_t done, size_t all) {
    EXPECT_GE(done, last);
    last = done;
    total = all;
    ++calls;
  };
  const std::string text = doc(roots());
  readEtJsonText(text, "progress", o);
  EXPECT_GE(calls, 2u);
  EXPECT_EQ(last, text.size());
  EXPECT_EQ(total, text.size());
}

}  // namespace
}  // namespace etb::trace

namespace etb::trace {
namespace {
// Our own torch 1.13 + gloo sample: invalid JSON (the pg config string is
// written unescaped) and c10d::allreduce_ with no record_param_comms below.
TEST(EtJsonFleet, Gloo113DdpGetsCollectivesFromC10dOps) {
  const std::string path = std::string(ETB_SOURCE_DIR) + "/fleet_samples/ddp2/ddp2.rank1.et.json.gz";
  if (!std::ifstream(path)) GTEST_SKIP() << path << " not recorded yet";
  const Trace t = readEtJson(path);
  ASSERT_FALSE(t.repairs.empty());
  EXPECT_NE(t.repairs[0].what.find("repaired JSON"), std::string::npos);
  ASSERT_EQ(t.process_groups.size(), 1u);
  EXPECT_EQ(t.process_groups[0].backend, "cpu:gloo");
  EXPECT_EQ(t.world_size, 2);
  ASSERT_GE(t.comms.size(), 1u);
  for (const CommInfo& c : t.comms) {
    EXPECT_EQ(c.type, CommType::kAllReduce);
    EXPECT_EQ(c.dtype, DType::kFloat);
    EXPECT_GT(c.in_elems, 0u);
    EXPECT_EQ(c.pg, 0);
    // allreduce_ returns a c10d.Work: posted async, waited by the reducer
    EXPECT_TRUE(c.is_async);
  }
  for (const Node& n : t.nodes) {
    if (n.comm >= 0) {
      EXPECT_EQ(t.name(n).rfind("c10d::", 0), 0u);
    }
  }
}
}  // namespace
}  // namespace etb::trace

namespace etb::trace {
namespace {
// torch 1.13 names c10d ops' arguments _0, _1, ...: allgather_ takes its
// output lists first, so the first tensor argument is not the input (a
// 4-rank dist.all_gather of one loss per rank was read as 4 elements in and
// 4 out, replayed as 16 floats per rank, and every et_compose of the trace
// failed its size rule). broadcast_'s root is its third argument.
TEST(EtJsonFleet, Gloo113PositionalC10dArgumentsByTheirNames) {
  auto t1 = [](int id) {
    return "[" + std::to_string(id) + "," + std::to_string(id + 1) + ",0,1,4,\"cpu\"]";
  };
  const std::string gather =
      "c10d::allgather_(Tensor[][] _0, Tensor[] _1, __torch__.torch.classes.c10d.ProcessGroup _2, "
      "int _3) -> (Tensor[][] _0, __torch__.torch.classes.c10d.Work _1)";
  const std::string bcast =
      "c10d::broadcast_(Tensor[] _0, __torch__.torch.classes.c10d.ProcessGroup _1, int _2, int _3, "
      "int _4) -> (Tensor[] _0, __torch__.torch.classes.c10d.Work _1)";
  const std::string text = doc(
      flat(3, "c10d::allgather_", 2, gather, 1,
           "[[[" + t1(10) + "," + t1(12) + "," + t1(14) + "," + t1(16) + "]],[" + t1(20) + "],\"<Object>\",-1]",
           "[\"GenericList[GenericList[Tensor(float),Tensor(float),Tensor(float),Tensor(float)]]\","
           "\"GenericList[Tensor(float)]\",\"Object\",\"Int\"]",
           "[[[[1],[1],[1],[1]]],[[1]],[],[]]") +
      ",\n" +
      flat(4, "c10d::broadcast_", 2, bcast, 1, "[[" + t1(30) + "],\"<Object>\",2,0,-1]",
           "[\"GenericList[Tensor(float)]\",\"Object\",\"Int\",\"Int\",\"Int\"]", "[[[1]],[],[],[],[]]") +
      ",\n" + roots());
  const Trace t = readEtJsonText(text, "gloo113");
  ASSERT_EQ(t.comms.size(), 2u);
  const CommInfo& g = t.comms[static_cast<size_t>(t.find(3)->comm)];
  EXPECT_EQ(g.type, CommType::kAllGather);
  EXPECT_EQ(g.in_elems, 1u);
  EXPECT_EQ(g.out_elems, 4u);
  const CommInfo& b = t.comms[static_cast<size_t>(t.find(4)->comm)];
  EXPECT_EQ(b.type, CommType::kBroadcast);
  EXPECT_EQ(b.root, 2);
}
}  // namespace
}  // namespace etb::trace

namespace etb::trace {
namespace {
// torch 1.13 has no c10d op for all_to_all_single: gloo's "gloo:all_to_all"
// label, with the input only, is all that shows it (wild2_ddp3). It is
// counted as a collective without comm info, and the reader says why; a
// gloo label right after or below its c10d op is the c10d op's, not another
// collective.
TEST(EtJsonFleet, Gloo113BareAllToAllIsCountedNotSized) {
  const std::string t12 = "[[40,41,0,12,4,\"cpu\"]]";
  const std::string reduce =
      "c10d::reduce_(Tensor[] _0, __torch__.torch.classes.c10d.ProcessGroup _1, "
      "__torch__.torch.classes.c10d.ReduceOp _2, int _3, int _4, int _5) -> "
      "__torch__.torch.classes.c10d.Work _0";
  const std::string text = doc(
      flat(3, "gloo:all_to_all", 2, "", 1, t12, "[\"Tensor(float)\"]", "[[12]]") + ",\n" +
      flat(4, "c10d::reduce_", 2, reduce, 1, "[[[50,51,0,4,4,\"cpu\"]],\"<Object>\",\"<Object>\",1,0,-1]",
           "[\"GenericList[Tensor(float)]\",\"Object\",\"Object\",\"Int\",\"Int\",\"Int\"]",
           "[[[4]],[],[],[],[],[]]") + ",\n" +
      flat(5, "gloo:reduce", 2, "", 1, "[[[50,51,0,4,4,\"cpu\"]]]",
           "[\"GenericList[Tensor(float)]\"]", "[[[4]]]") + ",\n" + roots());
  const Trace t = readEtJsonText(text, "gloo113_a2a");
  ASSERT_NE(t.find(3), nullptr);
  EXPECT_EQ(t.find(3)->kind, NodeKind::kCollective);
  EXPECT_LT(t.find(3)->comm, 0) << "sizes it cannot know";
  EXPECT_EQ(t.find(5)->kind, NodeKind::kLabel) << "c10d::reduce_'s own gloo label";
  ASSERT_EQ(t.comms.size(), 1u);
  bool named = false;
  for (const Repair& r : t.repairs) named = named || (r.node_id == 3 && r.what.find("all_to_all_single") != std::string::npos);
  EXPECT_TRUE(named) << "the reader does not say why node 3 is not sized";
}
}  // namespace
}  // namespace etb::trace
