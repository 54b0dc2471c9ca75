// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_consumer.h"

#include <algorithm>
#include <cctype>

#include "core/chakra/chakra_graph.h"
#include "schemas/et_def.pb.h"

namespace etb::trace::chakra {
namespace {
namespace pb = ChakraProtoMsg;

// comm_type/comm_size int64 and comm_src/dst/tag/priority int32 are what the
// classic feeder reads exactly and FeederV3 converts; tensor_size uint64 is
// what both read; num_ops int64 is the classic feeder's kind.
constexpr ConsumerAttr kAttrs[] = {
    {"is_cpu_op", Want::kBool, "bool"},        {"comm_type", Want::kInt, "int64"},
    {"comm_size", Want::kInt, "int64"},        {"comm_src", Want::kInt, "int32"},
    {"comm_dst", Want::kInt, "int32"},         {"comm_tag", Want::kInt, "int32"},
    {"comm_priority", Want::kInt, "int32"},    {"tensor_size", Want::kInt, "uint64"},
    {"num_ops", Want::kInt, "int64"},          {"pg_name", Want::kString, "string"},
    {"involved_dim", Want::kBoolList, "bool_list"},
};

std::optional<bool> asBool(const Trace& t, const Value& v) {
  if (v.kind == ValueKind::kBool) return v.b;
  if (v.kind == ValueKind::kInt) return v.i != 0;
  if (v.kind != ValueKind::kString) return std::nullopt;
  const std::string_view s = t.str(v.s);
  if (s == "True" || s == "true" || s == "1") return true;
  if (s == "False" || s == "false" || s == "0") return false;
  return std::nullopt;
}

bool allDigits(std::string_view s) {
  return !s.empty() && s.size() < 19 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}
}  // namespace

const ConsumerAttr* consumerAttr(std::string_view name) {
  for (const ConsumerAttr& a : kAttrs) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::optional<Attr> toConsumerKind(Trace& s, const Trace& t, const Attr& a, const ConsumerAttr& want) {
  Attr out;
  out.name = s.strings.intern(want.name);
  out.type = s.strings.intern(want.kind);
  const Value& v = a.value;
  switch (want.want) {
    case Want::kBool: {
      const auto b = asBool(t, v);
      if (!b) return std::nullopt;
      out.value = makeBool(s, *b);
      break;
    }
    case Want::kInt:
      if (v.kind == ValueKind::kInt || v.kind == ValueKind::kBool) {
        const int64_t i = v.kind == ValueKind::kInt ? v.i : (v.b ? 1 : 0);
        if (i < 0) return std::nullopt;  // every such getter is unsigned
        out.value = makeInt(s, i, want.kind);
      } else if (v.kind == ValueKind::kString && allDigits(t.str(v.s))) {
        out.value = makeInt(s, std::stoll(std::string(t.str(v.s))), want.kind);
      } else {
        return std::nullopt;
      }
      break;
    case Want::kString:
      if (v.kind == ValueKind::kString) {
        out.value = makeString(s, t.str(v.s));
      } else if (v.kind == ValueKind::kInt) {
        out.value = makeString(s, std::to_string(v.i));
      } else {
        return std::nullopt;
      }
      break;
    case Want::kBoolList:
      if (v.kind != ValueKind::kList) return std::nullopt;
      out.value.kind = ValueKind::kList;
      for (const Value& x : v.items) {
        const auto b = asBool(t, x);
        if (!b) return std::nullopt;
        out.value.items.push_back(makeBool(s, *b));
      }
      break;
  }
  // The type a plain read of the written kind gives back (see plainAttr).
  if (out.value.kind != ValueKind::kBool) out.value.type = out.type;
  return out;
}

bool isSimulatedCommType(int64_t v) {
  return v == pb::ALL_REDUCE || v == pb::ALL_GATHER || v == pb::BROADCAST || v == pb::ALL_TO_ALL ||
         v == pb::REDUCE_SCATTER;
}

// Collectives ASTRA-sim cannot simulate become the nearest one that moves at
// least as much data (reduce -> all-reduce, gather -> all-gather, a barrier
// -> a 1-byte all-reduce, which is what NCCL runs for it); a scatter or an
// unknown collective keeps its measured time as a compute node.
CommPlacement placeComm(const CommInfo& c) {
  CommPlacement p;
  p.node_type = pb::COMM_COLL_NODE;
  switch (c.type) {
    case CommType::kAllReduce: p.comm_type = pb::ALL_REDUCE; break;
    case CommType::kAllGather: p.comm_type = pb::ALL_GATHER; break;
    case CommType::kReduceScatter: p.comm_type = pb::REDUCE_SCATTER; break;
    case CommType::kBroadcast: p.comm_type = pb::BROADCAST; break;
    case CommType::kAllToAll:
    case CommType::kAllToAllV: p.comm_type = pb::ALL_TO_ALL; break;
    case CommType::kReduce: p.comm_type = pb::ALL_REDUCE; p.remap = "reduce->ALL_REDUCE"; break;
    case CommType::kGather: p.comm_type = pb::ALL_GATHER; p.remap = "gather->ALL_GATHER"; break;
    case CommType::kBarrier: p.comm_type = pb::ALL_REDUCE; p.remap = "barrier->ALL_REDUCE(1 byte)"; break;
    case CommType::kSend:
    case CommType::kRecv:
      if (c.peer < 0) {
        p.node_type = pb::COMP_NODE;
        p.remap = std::string(commTypeName(c.type)) + " without peer->COMP";
      } else {
        p.node_type = c.type == CommType::kSend ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE;
      }
      break;
    case CommType::kWait:
    case CommType::kInit: p.node_type = pb::COMP_NODE; break;
    default:
      p.node_type = pb::COMP_NODE;
      p.remap = std::string(commTypeName(c.type)) + "->COMP";
      break;
  }
  return p;
}

std::string pgKey(const Trace& t, const CommInfo& c) {
  std::string key(t.str(c.pg_name));
  if (key.empty() && c.pg >= 0 && static_cast<size_t>(c.pg) < t.process_groups.size()) {
    key = t.process_groups[static_cast<size_t>(c.pg)].name;
  }
  return key;
}

std::map<std::string, std::string> assignPgIds(const std::vector<std::string>& keys) {
  std::vector<std::string> sorted;
  for (const std::string& k : keys) {
    if (!k.empty()) sorted.push_back(k);
  }
  std::sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
    const bool na = allDigits(a), nb = allDigits(b);
    if (na != nb) return na;
    if (na && a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::map<std::string, std::string> ids;
  for (size_t i = 0; i < sorted.size(); ++i) ids[sorted[i]] = std::to_string(i + 1);
  return ids;
}

}  // namespace etb::trace::chakra
