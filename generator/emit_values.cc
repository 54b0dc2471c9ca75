// SPDX-License-Identifier: MIT
#include "generator/emit_values.h"

#include <cstdint>
#include <sstream>

#include "generator/escape.h"

namespace etb::gen {
namespace {
using trace::ValueKind;

// INT64_MIN has no literal: "-9223372036854775808" negates an unsigned.
std::string intLit(int64_t v) {
  return v == INT64_MIN ? "(-9223372036854775807 - 1)" : std::to_string(v);
}

std::string intList(const std::vector<int64_t>& xs) {
  std::string s = "{";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + intLit(xs[i]);
  return s + "}";
}
}  // namespace

std::string enumName(trace::DType v) {
  using D = trace::DType;
  switch (v) {
    case D::kUnknown: return "DType::kUnknown";
    case D::kFloat: return "DType::kFloat";
    case D::kDouble: return "DType::kDouble";
    case D::kHalf: return "DType::kHalf";
    case D::kBFloat16: return "DType::kBFloat16";
    case D::kInt64: return "DType::kInt64";
    case D::kInt32: return "DType::kInt32";
    case D::kInt16: return "DType::kInt16";
    case D::kInt8: return "DType::kInt8";
    case D::kUInt8: return "DType::kUInt8";
    case D::kBool: return "DType::kBool";
    case D::kComplexFloat: return "DType::kComplexFloat";
    case D::kComplexDouble: return "DType::kComplexDouble";
  }
  return "static_cast<DType>(" + std::to_string(static_cast<int>(v)) + ")";
}

std::string enumName(trace::CommType v) {
  using C = trace::CommType;
  switch (v) {
    case C::kUnknown: return "CommType::kUnknown";
    case C::kAllReduce: return "CommType::kAllReduce";
    case C::kReduce: return "CommType::kReduce";
    case C::kAllGather: return "CommType::kAllGather";
    case C::kGather: return "CommType::kGather";
    case C::kScatter: return "CommType::kScatter";
    case C::kBroadcast: return "CommType::kBroadcast";
    case C::kAllToAll: return "CommType::kAllToAll";
    case C::kAllToAllV: return "CommType::kAllToAllV";
    case C::kReduceScatter: return "CommType::kReduceScatter";
    case C::kBarrier: return "CommType::kBarrier";
    case C::kSend: return "CommType::kSend";
    case C::kRecv: return "CommType::kRecv";
    case C::kWait: return "CommType::kWait";
    case C::kInit: return "CommType::kInit";
  }
  return "static_cast<CommType>(" + std::to_string(static_cast<int>(v)) + ")";
}

std::string enumName(trace::ReduceOp v) {
  using R = trace::ReduceOp;
  switch (v) {
    case R::kSum: return "ReduceOp::kSum";
    case R::kProduct: return "ReduceOp::kProduct";
    case R::kMin: return "ReduceOp::kMin";
    case R::kMax: return "ReduceOp::kMax";
    case R::kAvg: return "ReduceOp::kAvg";
    case R::kUnknown: return "ReduceOp::kUnknown";
  }
  return "static_cast<ReduceOp>(" + std::to_string(static_cast<int>(v)) + ")";
}

std::string enumName(trace::NodeKind v) {
  using K = trace::NodeKind;
  switch (v) {
    case K::kOperator: return "NodeKind::kOperator";
    case K::kLabel: return "NodeKind::kLabel";
    case K::kCollective: return "NodeKind::kCollective";
    case K::kPointToPoint: return "NodeKind::kPointToPoint";
    case K::kWait: return "NodeKind::kWait";
    case K::kMarker: return "NodeKind::kMarker";
    case K::kRoot: return "NodeKind::kRoot";
    case K::kMetadata: return "NodeKind::kMetadata";
    case K::kKernel: return "NodeKind::kKernel";
    case K::kMemory: return "NodeKind::kMemory";
  }
  return "static_cast<NodeKind>(" + std::to_string(static_cast<int>(v)) + ")";
}

std::string TensorNames::use(const trace::TensorRef& r, std::string& decls) {
  const Key key{r.tensor_id, r.storage_id, r.offset, r.numel, r.itemsize,
                static_cast<int>(r.dtype), r.device, r.shape, r.strides, r.has_device,
                r.has_strides};
  if (auto it = names_.find(key); it != names_.end()) return it->second;
  const int k = per_id_[r.tensor_id]++;
  std::string name = "t" + std::to_string(r.tensor_id) + (k ? "_" + std::to_string(k) : "");
  const std::vector<int64_t>* derived = layouts_ != nullptr ? layouts_->find(r) : nullptr;
  const bool has_strides = r.has_strides || derived != nullptr;
  std::ostringstream os;
  const uint64_t storage = generations_ != nullptr ? generations_->bufferOf(t_, r) : r.storage_id;
  os << "  const TensorIx " << name << " = b.tensor(" << r.tensor_id << ", " << storage
     << ", " << r.offset << ", " << r.numel << ", " << r.itemsize << ", " << enumName(r.dtype)
     << ", " << sv(t_.str(r.device)) << ", " << intList(t_.list(r.shape)) << ", "
     << intList(derived != nullptr ? *derived : t_.list(r.strides));
  if (!r.has_device || !has_strides) {
    os << ", " << (r.has_device ? "true" : "false") << ", " << (has_strides ? "true" : "false");
  }
  os << ");\n";
  decls += os.str();
  names_.emplace(key, name);
  return name;
}

std::string valueExpr(const trace::Trace& t, const trace::Value& v, TensorNames& names,
                      std::string& decls) {
  const std::string type = sv(t.str(v.type));
  switch (v.kind) {
    case ValueKind::kNone: return "b.none(" + type + ")";
    case ValueKind::kInt: return "b.i(" + intLit(v.i) + ", " + type + ")";
    case ValueKind::kDouble: return "b.d(" + cDouble(v.d) + ", " + type + ")";
    case ValueKind::kBool: return std::string("b.b(") + (v.b ? "true" : "false") + ", " + type + ")";
    case ValueKind::kString: return "b.s(" + sv(t.str(v.s)) + ", " + type + ")";
    case ValueKind::kDevice: return "b.dev(" + sv(t.str(v.s)) + ", " + type + ")";
    case ValueKind::kOpaque: return "b.opaque(" + sv(t.str(v.s)) + ", " + type + ")";
    case ValueKind::kTensor: return "b.t(" + names.use(t.tensors[v.tensor], decls) + ", " + type + ")";
    case ValueKind::kList:
    case ValueKind::kTuple: {
      std::string s = v.kind == ValueKind::kList ? "b.list({" : "b.tuple({";
      for (size_t i = 0; i < v.items.size(); ++i) {
        s += (i ? ", " : "") + valueExpr(t, v.items[i], names, decls);
      }
      return s + "}, " + type + ")";
    }
  }
  return "b.none(" + type + ")";
}

std::string commInfoStatements(const trace::Trace& t, const trace::CommInfo& c,
                               const std::string& in) {
  const trace::CommInfo d;
  std::ostringstream os;
  os << in << "CommInfo c;\n" << in << "c.type = " << enumName(c.type) << ";\n";
  os << in << "c.raw_name = b.str(" << sv(t.str(c.raw_name)) << ");\n";
  if (c.pg != d.pg) os << in << "c.pg = " << c.pg << ";\n";
  if (c.pg_name != 0) os << in << "c.pg_name = b.str(" << sv(t.str(c.pg_name)) << ");\n";
  if (c.seq != d.seq) os << in << "c.seq = " << c.seq << ";\n";
  if (c.is_p2p) os << in << "c.is_p2p = true;\n";
  if (c.is_async) os << in << "c.is_async = true;\n";
  if (c.coalesced) os << in << "c.coalesced = true;\n";
  if (c.dtype != d.dtype) os << in << "c.dtype = " << enumName(c.dtype) << ";\n";
  if (c.reduce_op != d.reduce_op) os << in << "c.reduce_op = " << enumName(c.reduce_op) << ";\n";
  if (c.in_elems) os << in << "c.in_elems = " << c.in_elems << ";\n";
  if (c.out_elems) os << in << "c.out_elems = " << c.out_elems << ";\n";
  if (!c.in_splits.empty()) os << in << "c.in_splits = " << intList(c.in_splits) << ";\n";
  if (!c.out_splits.empty()) os << in << "c.out_splits = " << intList(c.out_splits) << ";\n";
  if (c.root != d.root) os << in << "c.root = " << c.root << ";\n";
  if (c.peer != d.peer) os << in << "c.peer = " << c.peer << ";\n";
  if (c.group_rank != d.group_rank) os << in << "c.group_rank = " << c.group_rank << ";\n";
  if (c.bytes) os << in << "c.bytes = " << c.bytes << ";\n";
  return os.str();
}

}  // namespace etb::gen
