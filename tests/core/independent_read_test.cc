// SPDX-License-Identifier: MIT
//
// Conversions checked against a read that shares no code with ours: Chakra
// files decoded with the generated protobuf classes directly, ET JSON and
// Kineto traces parsed with nlohmann. A writer or linker that changes a
// size, a type or a time fails here even when our own reader would read its
// mistake back consistently.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/file_io.h"
#include "core/chakra/chakra_reader.h"
#include "core/chakra/chakra_writer.h"
#include "core/kineto/kineto_linker.h"
#include "core/pytorch_et/et_json_reader.h"
#include "schemas/et_def.pb.h"
#include "tests/core/chakra_test_util.h"
#include "tests/test_util.h"

namespace etb::test {
namespace {
namespace pb = ChakraProtoMsg;

// An attribute's value as text; integers of any protobuf kind by value
// (the writer may pick another integer kind, which no reader can tell).
std::string valueText(const pb::AttributeProto& a) {
  using A = pb::AttributeProto;
  switch (a.value_case()) {
    case A::kInt32Val: return "int " + std::to_string(a.int32_val());
    case A::kInt64Val: return "int " + std::to_string(a.int64_val());
    case A::kUint32Val: return "int " + std::to_string(a.uint32_val());
    case A::kUint64Val: return "int " + std::to_string(a.uint64_val());
    case A::kSint32Val: return "int " + std::to_string(a.sint32_val());
    case A::kSint64Val: return "int " + std::to_string(a.sint64_val());
    case A::kFixed32Val: return "int " + std::to_string(a.fixed32_val());
    case A::kFixed64Val: return "int " + std::to_string(a.fixed64_val());
    case A::kSfixed32Val: return "int " + std::to_string(a.sfixed32_val());
    case A::kSfixed64Val: return "int " + std::to_string(a.sfixed64_val());
    default: {
      pb::AttributeProto v = a;
      v.clear_name();
      return v.ShortDebugString();
    }
  }
}

std::map<std::string, std::string> attrsOf(const pb::Node& n) {
  std::map<std::string, std::string> out;
  for (const pb::AttributeProto& a : n.attr()) out[a.name()] = valueText(a);
  return out;
}

// Record-function fields and an empty op_schema: the writer leaves them out when they hold the value a
// reader assumes when absent (chakra_writer.cc); any other value must stay.
bool omittedDefault(const std::string& name, const std::string& text) {
  if (name == "seq_id") return text == "int -1";
  if (name == "op_schema") return text == "string_val: \"\"";
  return (name == "rf_id" || name == "fw_parent" || name == "scope" || name == "tid" ||
          name == "fw_tid") && text == "int 0";
}

// Dependencies: the rewrite keeps the original's, in order, except those
// the reader dropped as a recorded repair (self, dangling, or a ctrl edge
// on a cycle: chakra_deps.cc). Never one added or changed, and none on
// node 0 lost (ASTRA-sim's files number their nodes from 0).
void expectDeps(const char* what, const google::protobuf::RepeatedField<uint64_t>& want,
                const google::protobuf::RepeatedField<uint64_t>& got, bool repaired) {
  const std::vector<uint64_t> kept(want.begin(), want.end());
  const std::vector<uint64_t> out(got.begin(), got.end());
  if (repaired) {  // a subsequence of the original
    size_t k = 0;
    for (uint64_t d : kept) k += k < out.size() && out[k] == d;
    EXPECT_EQ(k, out.size()) << what << " changed, not only dropped";
  } else {
    EXPECT_EQ(out, kept) << what;
  }
}

// A collective node a simulator cannot run: no comm_type, one ASTRA-sim does
// not simulate (only ALL_REDUCE 0, ALL_GATHER 2, BROADCAST 5, ALL_TO_ALL 6,
// REDUCE_SCATTER 7), or no comm_size (a mandatory getter). The writer turns
// such nodes into compute nodes by the consumer rules
// (../shared/docs/chakra_and_astrasim.md), so only that change is allowed.
bool unsimulatableCollective(const pb::Node& n) {
  if (n.type() != pb::COMM_COLL_NODE) return false;
  const auto a = attrsOf(n);
  const auto type = a.find("comm_type");
  if (type == a.end() || a.find("comm_size") == a.end()) return true;
  for (const char* ok : {"int 0", "int 2", "int 5", "int 6", "int 7"}) {
    if (type->second == ok) return false;
  }
  return true;
}

// Every node of the original file, as protobuf sees it, is in our rewrite
// with the same id, name, type, dependencies, duration, inputs, outputs and
// attributes. (The rewrite may add attributes of its own; none may change.)
void expectSameNodes(const std::vector<pb::Node>& want, const std::vector<pb::Node>& got,
                     const std::set<uint64_t>& repaired) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const pb::Node& w = want[i];
    const pb::Node& g = got[i];
    SCOPED_TRACE("node " + std::to_string(w.id()));
    EXPECT_EQ(g.id(), w.id());
    EXPECT_EQ(g.name(), w.name());
    const bool remapped = unsimulatableCollective(w);
    if (remapped) {
      EXPECT_EQ(g.type(), pb::COMP_NODE) << "an unsimulatable collective stays COMM_COLL";
    } else {
      EXPECT_EQ(g.type(), w.type());
    }
    EXPECT_EQ(g.duration_micros(), w.duration_micros());
    const bool fixed = repaired.count(w.id()) > 0;
    expectDeps("ctrl_deps", w.ctrl_deps(), g.ctrl_deps(), fixed);
    expectDeps("data_deps", w.data_deps(), g.data_deps(), fixed);
    const auto ga = attrsOf(g);
    for (const auto& [name, text] : attrsOf(w)) {
      auto it = ga.find(name);
      if (remapped && name.rfind("comm_", 0) == 0) continue;  // no longer a collective
      if (it == ga.end()) {
        if (!omittedDefault(name, text)) ADD_FAILURE() << "attr " << name << " lost: " << text;
      } else {
        EXPECT_EQ(it->second, text) << "attr " << name;
      }
    }
    if (::testing::Test::HasFailure()) return;  // one node's story is enough
  }
}

TEST(IndependentRead, PublicChakraFilesRewriteToTheSameProtobufNodes) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::vector<std::string> files = listFiles(dir, {".et"});
  ASSERT_FALSE(files.empty());
  size_t comm_sizes = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const std::vector<pb::Node> want = framedNodes(readFileMaybeGzip(f));
    const trace::Trace t = trace::readChakra(f);
    std::set<uint64_t> repaired;
    for (const trace::Repair& r : t.repairs) repaired.insert(r.node_id);
    expectSameNodes(want, framedNodes(trace::writeChakraBytes(t)), repaired);
    for (const pb::Node& n : want) comm_sizes += attrsOf(n).count("comm_size");
  }
  EXPECT_GT(comm_sizes, 0u) << "no comm_size attribute among the files: the check proves little";
}

// ET JSON -> Chakra: every record_param_comms node of a public trace, read
// with nlohmann, becomes a node of the same id whose comm_size is the
// recorded message: max(in, out) elements x the dtype's size.
TEST(IndependentRead, EtJsonCommSizesSurviveConversionToChakra) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::string path = dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz";
  const nlohmann::json file = nlohmann::json::parse(readFileMaybeGzip(path));
  const std::map<std::string, int64_t> kSize{{"Float", 4}, {"Long", 8}, {"Int", 4},
                                             {"Double", 8}, {"Half", 2}, {"Byte", 1}};
  std::map<uint64_t, int64_t> want;  // node id -> bytes
  for (const auto& n : file.at("nodes")) {
    if (n.at("name") != "record_param_comms") continue;
    std::map<std::string, nlohmann::json> attrs;
    for (const auto& a : n.at("attrs")) attrs[a.at("name")] = a.at("value");
    const int64_t elems = std::max(attrs.at("in_msg_nelems").get<int64_t>(),
                                   attrs.at("out_msg_nelems").get<int64_t>());
    want[n.at("id").get<uint64_t>()] = elems * kSize.at(attrs.at("dtype").get<std::string>());
  }
  ASSERT_GT(want.size(), 10u);
  size_t payloads = 0;
  for (const auto& [id, bytes] : want) payloads += bytes > 0;
  const std::vector<pb::Node> nodes = framedNodes(trace::writeChakraBytes(trace::readEtJson(path)));
  size_t checked = 0;
  for (const pb::Node& n : nodes) {
    auto it = want.find(n.id());
    if (it == want.end() || it->second == 0) continue;  // barriers, waits: no payload
    ++checked;
    int64_t size = -1;
    for (const pb::AttributeProto& a : n.attr()) {
      if (a.name() == "comm_size") size = a.int64_val();
    }
    EXPECT_EQ(size, it->second) << "node " << n.id();
  }
  EXPECT_EQ(checked, payloads);
}

// Kineto: every duration and start the linker attached equals that of the
// profiler event with the node's key, read here with nlohmann.
void expectDurationsFromEvents(const std::string& et, const std::string& kineto) {
  trace::Trace t = trace::readEtJson(et);
  const trace::LinkStats s = trace::linkKineto(t, kineto);
  ASSERT_FALSE(s.key.empty());
  const nlohmann::json k = nlohmann::json::parse(readFileMaybeGzip(kineto));
  std::map<int64_t, std::vector<nlohmann::json>> by_key;
  for (const auto& e : k.at("traceEvents")) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "cpu_op") continue;
    const auto args = e.find("args");
    if (args == e.end() || !args->contains(s.key) || !args->at(s.key).is_number()) continue;
    by_key[args->at(s.key).get<int64_t>()].push_back(e);
  }
  size_t checked = 0, unmatched = 0, wrong = 0;
  for (const trace::Node& n : t.nodes) {
    if (n.kind != trace::NodeKind::kOperator || n.dur_us < 0) continue;
    auto it = by_key.find(static_cast<int64_t>(n.rf_id));  // both keys carry rf_id
    if (it == by_key.end()) {
      ++unmatched;
      continue;
    }
    ++checked;
    bool same = false;
    for (const auto& e : it->second) {
      same = same || (e.at("dur").get<double>() == n.dur_us && e.at("ts").get<double>() == n.start_us);
    }
    if (!same && ++wrong <= 5) {
      ADD_FAILURE() << "node " << n.id << " " << t.name(n) << ": dur " << n.dur_us << " start "
                    << n.start_us << " vs event " << it->second[0].dump();
    }
  }
  EXPECT_EQ(wrong, 0u);
  std::fprintf(stderr, "%s: %zu linked operator durations equal their event, %zu without one\n",
               et.c_str(), checked, unmatched);
  EXPECT_GE(checked, s.linked_operators * 9 / 10);
}

TEST(IndependentRead, KinetoDurationsEqualTheProfilerEvents) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  expectDurationsFromEvents(dir + "/param/linear_et.json.gz", dir + "/param/linear_kineto.json.gz");
  expectDurationsFromEvents(dir + "/hta/benchmark_simple_add_et.json.gz",
                            dir + "/hta/benchmark_simple_add_trace.json.gz");
}

}  // namespace
}  // namespace etb::test
