// SPDX-License-Identifier: MIT
//
// CommInfo from record_param_comms and bare c10d:: ops.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/pytorch_et/et_comm_util.h"
#include "core/pytorch_et/op_schema.h"

namespace etb::trace::detail {
namespace {

// The positional inputs of record_param_comms, in every layout:
//  1.0.1  [data, seq, pg ptr, rank, name, in_split, out_split]
//  1.0.2  ... + world_size                 (pg = Int backend_id)
//  1.0.3+ [data, seq, (pg_name, pg_desc), rank, name, in_split, out_split,
//          global_rank_start, global_rank_stride, world_size (, isAsyncOp)]
//  newer  seq may be a (seq, isP2P) tuple; non-data variants have no data.
struct RpcArgs {
  const Value* data = nullptr;
  int64_t seq = -1;
  bool p2p = false;
  std::string_view pg_name, pg_desc;
  int64_t pg_int = -1;
  int64_t rank = -1;
  std::string_view name;
  const Value* in_split = nullptr;
  const Value* out_split = nullptr;
  std::vector<int64_t> tail;  // (start, stride,) world_size
};

RpcArgs positional(const Trace& t, const Node& n) {
  RpcArgs a;
  const std::vector<Value>& in = n.inputs;
  size_t i = 0;
  auto is = [&](ValueKind k) { return i < in.size() && in[i].kind == k; };
  if (is(ValueKind::kTensor) || is(ValueKind::kList)) a.data = &in[i++];
  if (is(ValueKind::kInt)) {
    a.seq = in[i++].i;
  } else if (is(ValueKind::kTuple) && !in[i].items.empty() && in[i].items[0].kind == ValueKind::kInt) {
    a.seq = in[i].items[0].i;
    a.p2p = in[i].items.size() > 1 && in[i].items[1].kind == ValueKind::kBool && in[i].items[1].b;
    ++i;
  }
  if (is(ValueKind::kTuple)) {
    const auto& items = in[i++].items;
    if (!items.empty() && items[0].kind == ValueKind::kString) a.pg_name = t.str(items[0].s);
    if (items.size() > 1 && items[1].kind == ValueKind::kString) a.pg_desc = t.str(items[1].s);
  } else if (is(ValueKind::kInt)) {
    a.pg_int = in[i++].i;
  }
  if (is(ValueKind::kInt)) a.rank = in[i++].i;
  if (!is(ValueKind::kString)) return a;  // not a layout we know past here
  a.name = t.str(in[i++].s);
  if (is(ValueKind::kList)) a.in_split = &in[i++];
  if (is(ValueKind::kList)) a.out_split = &in[i++];
  while (is(ValueKind::kInt)) a.tail.push_back(in[i++].i);
  return a;
}

const Value* attrValue(const Trace& t, const Node& n, std::string_view name) {
  const Attr* a = t.attr(n, name);
  return a != nullptr ? &a->value : nullptr;
}

std::string_view attrString(const Trace& t, const Node& n, std::string_view name) {
  const Value* v = attrValue(t, n, name);
  return v != nullptr && v->kind == ValueKind::kString ? t.str(v->s) : std::string_view();
}

int64_t attrInt(const Trace& t, const Node& n, std::string_view name, int64_t fallback) {
  const Value* v = attrValue(t, n, name);
  return v != nullptr && v->kind == ValueKind::kInt ? v->i : fallback;
}

// "[48, 48]" (the 1.1.0 split attrs hold a JSON list in a string).
std::vector<int64_t> parseIntList(std::string_view s) {
  std::vector<int64_t> out;
  int64_t cur = 0;
  bool in_num = false, neg = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      cur = cur * 10 + (c - '0');
      in_num = true;
    } else {
      if (in_num) out.push_back(neg ? -cur : cur);
      neg = c == '-';
      cur = 0;
      in_num = false;
    }
  }
  if (in_num) out.push_back(neg ? -cur : cur);
  return out;
}

std::vector<int64_t> intItems(const Value* v) {
  std::vector<int64_t> out;
  if (v == nullptr) return out;
  for (const Value& x : v->items) {
    if (x.kind == ValueKind::kInt) out.push_back(x.i);
  }
  return out;
}

bool isRooted(CommType c) {
  return c == CommType::kBroadcast || c == CommType::kReduce || c == CommType::kGather ||
         c == CommType::kScatter;
}

uint64_t messageBytes(const CommInfo& c) {
  const bool by_out = c.type == CommType::kAllGather || c.type == CommType::kGather;
  return (by_out ? c.out_elems : c.in_elems) * static_cast<uint64_t>(dtypeSize(c.dtype));
}

// Group-local rank -> global rank.
int64_t toGlobal(const Trace& t, const CommInfo& c, int64_t r, int64_t start, int64_t stride) {
  if (r < 0) return r;
  if (c.pg >= 0) {
    const ProcessGroup& g = t.process_groups[static_cast<size_t>(c.pg)];
    if (static_cast<size_t>(r) < g.ranks.size()) return g.ranks[static_cast<size_t>(r)];
  }
  if (start >= 0) return start + r * std::max<int64_t>(stride, 1);
  return r;
}

int32_t groupIndex(const Trace& t, std::string_view name) {
  for (size_t i = 0; i < t.process_groups.size(); ++i) {
    if (t.process_groups[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}
}  // namespace

CommInfo commFromRecordParamComms(Trace& t, const Node& n, const PgByBackend& pgs,
                                  std::vector<int64_t>* rank_votes,
                                  std::vector<int64_t>* world_votes) {
  const RpcArgs a = positional(t, n);
  CommInfo c;
  std::string_view name = attrString(t, n, "collective_name");
  if (name.empty()) name = a.name;
  c.raw_name = t.strings.intern(name);
  c.type = parseCommType(name);
  c.coalesced = name.find("coalesced") != std::string_view::npos;
  c.seq = a.seq;
  c.is_p2p = a.p2p || c.type == CommType::kSend || c.type == CommType::kRecv;
  std::string_view pg_name = attrString(t, n, "pg_name");
  if (pg_name.empty()) pg_name = a.pg_name;
  c.pg_name = t.strings.intern(pg_name);
  if (!pg_name.empty()) {
    c.pg = groupIndex(t, pg_name);
  } else if (a.pg_int >= 0) {
    auto it = pgs.find(a.pg_int);
    if (it != pgs.end()) {
      c.pg = it->second;
      c.pg_name = t.strings.intern(t.process_groups[static_cast<size_t>(it->second)].name);
    }
  }
  const std::string_view dtype = attrString(t, n, "dtype");
  c.dtype = !dtype.empty() ? parseDType(dtype) : DType::kUnknown;
  if (c.dtype == DType::kUnknown && a.data != nullptr) c.dtype = firstDType(t, *a.data);
  if (c.dtype == DType::kUnknown && !n.outputs.empty()) c.dtype = firstDType(t, n.outputs[0]);
  uint64_t out_elems = 0;
  for (const Value& v : n.outputs) out_elems += sumNumel(t, v);
  c.in_elems = static_cast<uint64_t>(attrInt(t, n, "in_msg_nelems", a.data ? static_cast<int64_t>(sumNumel(t, *a.data)) : 0));
  c.out_elems = static_cast<uint64_t>(attrInt(t, n, "out_msg_nelems", static_cast<int64_t>(out_elems)));
  const Value* in_split = attrValue(t, n, "in_split_size");
  const Value* out_split = attrValue(t, n, "out_split_size");
  c.in_splits = in_split && in_split->kind == ValueKind::kString ? parseIntList(t.str(in_split->s)) : intItems(a.in_split);
  c.out_splits = out_split && out_split->kind == ValueKind::kString ? parseIntList(t.str(out_split->s)) : intItems(a.out_split);
  c.group_rank = a.rank;
  const bool has_grs = a.tail.size() >= 3;
  const int64_t start = attrInt(t, n, "global_rank_start", has_grs ? a.tail[0] : -1);
  const int64_t stride = attrInt(t, n, "global_rank_stride", has_grs ? a.tail[1] : 1);
  int64_t world = attrInt(t, n, "pg_size", a.tail.empty() ? -1 : a.tail.back());
  if (isRooted(c.type)) c.root = toGlobal(t, c, a.rank, start, stride);
  if (c.is_p2p) c.peer = toGlobal(t, c, a.rank, start, stride);
  c.bytes = messageBytes(c);
  // This file's rank and the world: from collectives on the whole world only
  // (wait/barrier records carry placeholder ranks in some versions).
  const bool world_group = c.pg < 0 || t.process_groups[static_cast<size_t>(c.pg)].ranks.size() ==
                                           static_cast<size_t>(std::max<int64_t>(world, 0));
  if (c.type == CommType::kAllToAllV && world < 0) world = static_cast<int64_t>(c.in_splits.size());
  if (world > 0 && world_group && c.type != CommType::kWait) world_votes->push_back(world);
  const bool votes = c.type != CommType::kUnknown && c.type != CommType::kWait &&
                     c.type != CommType::kBarrier && c.type != CommType::kInit && !isRooted(c.type) &&
                     !c.is_p2p;
  if (votes && a.rank >= 0 && (c.pg < 0 || world_group)) {
    rank_votes->push_back(toGlobal(t, c, a.rank, start, stride));
  }
  return c;
}

namespace {
bool oneOf(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

// torch 1.13 names its c10d ops' arguments _0, _1, ...; their names in its
// Ops.cpp, so that outputs (which come first) are not taken for inputs.
std::vector<std::string_view> positionalNames(std::string_view op) {
  if (oneOf(op, {"c10d::allgather_", "c10d::reduce_scatter_", "c10d::alltoall_"})) {
    return {"output_tensors", "input_tensors"};
  }
  if (oneOf(op, {"c10d::gather_", "c10d::scatter_"})) {
    return {"output_tensors", "input_tensors", "pg", "root_rank"};
  }
  if (op == "c10d::broadcast_") return {"tensors", "pg", "root_rank"};
  if (op == "c10d::reduce_") return {"tensors", "pg", "reduce_op", "root_rank"};
  if (op == "c10d::send") return {"tensors", "pg", "dstRank"};
  if (op == "c10d::recv_") return {"tensors", "pg", "srcRank"};
  return {};
}

bool hasTensor(const Value& v) {
  if (v.kind == ValueKind::kTensor) return true;
  return std::any_of(v.items.begin(), v.items.end(), hasTensor);
}
}  // namespace

bool commFromC10dOp(Trace& t, const Node& n, CommInfo* out) {
  const std::string_view name = t.name(n);
  CommInfo c;
  c.type = parseCommType(name);
  if (c.type == CommType::kUnknown) return false;
  c.raw_name = t.strings.intern(name.substr(name.find("::") + 2));
  c.coalesced = name.find("coalesced") != std::string_view::npos;
  c.is_p2p = c.type == CommType::kSend || c.type == CommType::kRecv;
  std::vector<std::string_view> args = schemaArgNames(t.str(n.op_schema));
  if (!args.empty() && args[0] == "_0") {
    const std::vector<std::string_view> real = positionalNames(name);
    std::copy_n(real.begin(), std::min(real.size(), args.size()), args.begin());
  }
  const Value* in = nullptr;
  const Value* outv = nullptr;
  for (size_t i = 0; i < n.inputs.size() && i < args.size(); ++i) {
    const Value& v = n.inputs[i];
    const std::string_view a = args[i];
    if (oneOf(a, {"tensors", "input_tensors", "input", "input_tensor", "inputTensors", "tensor"})) {
      in = &v;
    } else if (oneOf(a, {"output_tensors", "output", "output_tensor", "outputTensors"})) {
      outv = &v;
    } else if (oneOf(a, {"root_rank", "rootRank", "root"}) && v.kind == ValueKind::kInt) {
      c.root = v.i;
    } else if (oneOf(a, {"dstRank", "srcRank", "dst", "src", "dst_rank", "src_rank"}) &&
               v.kind == ValueKind::kInt) {
      c.peer = v.i;
    } else if (a == "input_split_sizes") {
      c.in_splits = intItems(&v);
    } else if (a == "output_split_sizes") {
      c.out_splits = intItems(&v);
    }
  }
  if (in == nullptr) {  // no schema, or names we do not know: first tensor argument
    for (const Value& v : n.inputs) {
      if (hasTensor(v)) {
        in = &v;
        break;
      }
    }
  }
  if (in != nullptr) {
    c.in_elems = sumNumel(t, *in);
    c.dtype = firstDType(t, *in);
  }
  c.out_elems = outv != nullptr ? sumNumel(t, *outv) : c.in_elems;
  // The ProcessGroup argument is an opaque "<Object>": with one group it can
  // only be that one.
  if (t.process_groups.size() == 1) {
    c.pg = 0;
    c.pg_name = t.strings.intern(t.process_groups[0].name);
  }
  if (c.dtype == DType::kUnknown && outv != nullptr) c.dtype = firstDType(t, *outv);
  // An op returning a Work was posted asynchronously (torch 1.13's DDP buckets):
  // the trace records no wait, so the replay completes it before the first op
  // that reads its tensors, or at the end of the iteration.
  const std::string_view schema = t.str(n.op_schema);
  const size_t ret = schema.rfind("->");
  c.is_async = ret != std::string_view::npos && schema.find("c10d.Work", ret) != std::string_view::npos;
  c.bytes = messageBytes(c);
  *out = std::move(c);
  return true;
}

}  // namespace etb::trace::detail
