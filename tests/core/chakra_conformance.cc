// SPDX-License-Identifier: MIT
#include "tests/core/chakra_conformance.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "schemas/et_def.pb.h"
#include "tests/core/chakra_test_util.h"

namespace etb::test {
namespace {
namespace pb = ChakraProtoMsg;
using AP = pb::AttributeProto;

enum class Getter { kBool, kUint64, kUint32, kString, kBoolList };

bool isIntKind(AP::ValueCase c) {
  switch (c) {
    case AP::kInt32Val: case AP::kInt64Val: case AP::kUint32Val: case AP::kUint64Val:
    case AP::kSint32Val: case AP::kSint64Val: case AP::kFixed32Val: case AP::kFixed64Val:
    case AP::kSfixed32Val: case AP::kSfixed64Val:
      return true;
    default:
      return false;
  }
}

// The value of an integer kind as a signed 128-bit-free pair (negative flag).
bool intValue(const AP& a, uint64_t* v) {
  int64_t s = 0;
  switch (a.value_case()) {
    case AP::kUint32Val: *v = a.uint32_val(); return true;
    case AP::kUint64Val: *v = a.uint64_val(); return true;
    case AP::kFixed32Val: *v = a.fixed32_val(); return true;
    case AP::kFixed64Val: *v = a.fixed64_val(); return true;
    case AP::kInt32Val: s = a.int32_val(); break;
    case AP::kInt64Val: s = a.int64_val(); break;
    case AP::kSint32Val: s = a.sint32_val(); break;
    case AP::kSint64Val: s = a.sint64_val(); break;
    case AP::kSfixed32Val: s = a.sfixed32_val(); break;
    case AP::kSfixed64Val: s = a.sfixed64_val(); break;
    default: return false;
  }
  if (s < 0) return false;
  *v = static_cast<uint64_t>(s);
  return true;
}

struct GetterRule {
  const char* name;
  Getter getter;
  bool mandatory;
};

// Per node type: what the workload layer reads (the doc's getter table).
std::vector<GetterRule> gettersFor(int type) {
  switch (type) {
    case pb::COMP_NODE: return {{"is_cpu_op", Getter::kBool, false}};
    case pb::MEM_LOAD_NODE:
    case pb::MEM_STORE_NODE: return {{"tensor_size", Getter::kUint64, true}};
    case pb::COMM_COLL_NODE:
      return {{"is_cpu_op", Getter::kBool, false},     {"involved_dim", Getter::kBoolList, false},
              {"pg_name", Getter::kString, false},     {"comm_type", Getter::kUint64, true},
              {"comm_size", Getter::kUint64, true},    {"comm_priority", Getter::kUint32, false}};
    case pb::COMM_SEND_NODE:
      return {{"is_cpu_op", Getter::kBool, false}, {"comm_src", Getter::kUint32, false},
              {"comm_dst", Getter::kUint32, true},  {"comm_size", Getter::kUint64, true},
              {"comm_tag", Getter::kUint32, true}};
    case pb::COMM_RECV_NODE:
      return {{"is_cpu_op", Getter::kBool, false}, {"comm_src", Getter::kUint32, true},
              {"comm_dst", Getter::kUint32, false}, {"comm_size", Getter::kUint64, true},
              {"comm_tag", Getter::kUint32, true}};
    default: return {};
  }
}

class Checker {
 public:
  explicit Checker(const std::string& b) : b_(b) {}

  Conformance run() {
    std::string_view msg;
    if (!next(&msg)) {
      if (pos_ >= b_.size()) fail("metadata_first", 0, "empty file");
      return std::move(r_);
    }
    pb::GlobalMetadata md;
    const bool md_ok = md.ParseFromArray(msg.data(), static_cast<int>(msg.size())) &&
                       md.GetReflection()->GetUnknownFields(md).empty();
    if (!md_ok) fail("metadata_first", 0, "first message is not a GlobalMetadata");
    while (next(&msg)) node(msg);
    graph();
    return std::move(r_);
  }

 private:
  void fail(const char* rule, uint64_t node, std::string what) {
    r_.violations.push_back({rule, node, std::move(what)});
  }

  bool next(std::string_view* msg) {
    std::string error;
    if (!nextFramed(b_, &pos_, msg, &error)) {
      if (!error.empty()) fail("framing", 0, error);
      return false;
    }
    if (msg->empty()) fail("empty_message", 0, "zero-length message at byte " + std::to_string(pos_));
    return true;
  }

  void node(std::string_view msg) {
    pb::Node n;
    if (msg.empty()) return;
    if (!n.ParseFromArray(msg.data(), static_cast<int>(msg.size())) ||
        !n.GetReflection()->GetUnknownFields(n).empty()) {
      fail("node_parse", 0, "message " + std::to_string(r_.nodes.size() + 1) + " is not a Node");
      return;
    }
    SimNode s;
    s.id = n.id();
    s.type = n.type();
    s.data_deps.assign(n.data_deps().begin(), n.data_deps().end());
    s.ctrl_deps.assign(n.ctrl_deps().begin(), n.ctrl_deps().end());
    s.duration_micros = n.duration_micros();
    if (s.type < pb::METADATA_NODE || s.type > pb::COMM_COLL_NODE) {
      fail("node_type", s.id, "type " + std::to_string(s.type));
    }
    std::map<std::string, const AP*> attrs;
    for (const AP& a : n.attr()) attrs.emplace(a.name(), &a);
    if (const auto t = attrs.find("tid"); t != attrs.end() && isIntKind(t->second->value_case())) {
      uint64_t v = 0;
      if (intValue(*t->second, &v)) s.tid = static_cast<int64_t>(v);
    }
    for (const GetterRule& g : gettersFor(s.type)) getter(g, attrs, &s);
    const bool comm = s.type >= pb::COMM_SEND_NODE && s.type <= pb::COMM_COLL_NODE;
    if (comm && s.is_cpu_op) fail("comm_on_cpu", s.id, "is_cpu_op true on a communication node");
    if (comm && !s.pg_name.empty()) r_.pg_names.insert(s.pg_name);
    r_.nodes.push_back(std::move(s));
  }

  void getter(const GetterRule& g, const std::map<std::string, const AP*>& attrs, SimNode* s) {
    const auto it = attrs.find(g.name);
    if (it == attrs.end()) {
      if (g.mandatory) fail("missing_attr", s->id, std::string(g.name) + " is mandatory here");
      return;
    }
    const AP& a = *it->second;
    const std::string name(g.name);
    uint64_t v = 0;
    switch (g.getter) {
      case Getter::kBool:
        if (a.value_case() != AP::kBoolVal) return fail("attr_kind", s->id, name + " is not a bool");
        s->is_cpu_op = a.bool_val();
        return;
      case Getter::kBoolList:
        if (a.value_case() != AP::kBoolList) fail("attr_kind", s->id, name + " is not a bool list");
        return;
      case Getter::kString:
        if (a.value_case() != AP::kStringVal) return fail("attr_kind", s->id, name + " is not a string");
        pgName(a.string_val(), s);
        return;
      case Getter::kUint64:
      case Getter::kUint32:
        if (!isIntKind(a.value_case())) return fail("attr_kind", s->id, name + " is not an integer kind");
        if (!intValue(a, &v) || (g.getter == Getter::kUint32 && v > 0xffffffffull)) {
          return fail("attr_range", s->id, name + " does not fit its unsigned getter");
        }
        if (name == "comm_type") {
          s->comm_type = static_cast<int64_t>(v);
          const bool sim = v == pb::ALL_REDUCE || v == pb::ALL_GATHER || v == pb::BROADCAST ||
                           v == pb::ALL_TO_ALL || v == pb::REDUCE_SCATTER;
          if (!sim) fail("comm_type", s->id, "comm_type " + std::to_string(v) + " is not simulated");
        }
        if (name == "comm_size") s->comm_size = v;
        return;
    }
  }

  // ASTRA-sim stoi's it; "" means all ranks, 0 is its reserved group.
  void pgName(const std::string& v, SimNode* s) {
    s->pg_name = v;
    if (v.empty()) return;
    const bool digits = v.size() < 10 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoll(v) == 0) fail("pg_name", s->id, "pg_name '" + v + "' is not a group id > 0");
  }

  void graph() {
    std::unordered_map<uint64_t, size_t> index;
    for (size_t i = 0; i < r_.nodes.size(); ++i) {
      if (!index.emplace(r_.nodes[i].id, i).second) {
        fail("duplicate_id", r_.nodes[i].id, "id used twice");
      }
    }
    std::vector<std::vector<size_t>> users(r_.nodes.size());
    std::vector<size_t> pending(r_.nodes.size(), 0);
    for (size_t i = 0; i < r_.nodes.size(); ++i) {
      const SimNode& n = r_.nodes[i];
      for (const auto* deps : {&n.data_deps, &n.ctrl_deps}) {
        for (uint64_t d : *deps) {
          const auto it = index.find(d);
          if (d == n.id) {
            fail("self_dep", n.id, "depends on itself");
          } else if (it == index.end()) {
            fail("missing_dep", n.id, "depends on absent node " + std::to_string(d));
          } else {
            users[it->second].push_back(i);
            ++pending[i];
          }
        }
      }
    }
    std::vector<size_t> ready;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i] == 0) ready.push_back(i);
    }
    size_t done = 0;
    while (!ready.empty()) {
      const size_t i = ready.back();
      ready.pop_back();
      ++done;
      for (size_t u : users[i]) {
        if (--pending[u] == 0) ready.push_back(u);
      }
    }
    if (done == r_.nodes.size()) return;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i] != 0) return fail("cycle", r_.nodes[i].id, "never becomes ready (cycle)");
    }
  }

  const std::string& b_;
  size_t pos_ = 0;
  Conformance r_;
};
}  // namespace

bool Conformance::has(const std::string& rule) const {
  return std::any_of(violations.begin(), violations.end(), [&](const Violation& v) { return v.rule == rule; });
}

std::string Conformance::summary(size_t max) const {
  std::ostringstream os;
  for (size_t i = 0; i < violations.size() && i < max; ++i) {
    os << violations[i].rule << " node " << violations[i].node << ": " << violations[i].what << "; ";
  }
  if (violations.size() > max) os << "(" << violations.size() << " in all)";
  return os.str();
}

Conformance checkChakraConformance(const std::string& bytes) {
  google::protobuf::LogSilencer quiet;
  return Checker(bytes).run();
}

Conformance checkChakraFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return checkChakraConformance(ss.str());
}

std::vector<Violation> checkCommGroups(const std::string& json_text,
                                       const std::set<std::string>& pg_names, int64_t ranks) {
  std::vector<Violation> out;
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object()) return {{"comm_group", 0, "not a JSON object"}};
  for (const auto& [id, members] : j.items()) {
    const bool digits = !id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoll(id) <= 0) out.push_back({"comm_group", 0, "group id '" + id + "' is not > 0"});
    if (!members.is_array() || members.empty()) out.push_back({"comm_group", 0, "group " + id + " has no ranks"});
    for (const auto& r : members) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= ranks) {
        out.push_back({"comm_group", 0, "group " + id + " names rank " + r.dump()});
      }
    }
  }
  for (const std::string& pg : pg_names) {
    if (!j.contains(pg)) out.push_back({"comm_group", 0, "pg_name " + pg + " has no group"});
  }
  return out;
}

}  // namespace etb::test
