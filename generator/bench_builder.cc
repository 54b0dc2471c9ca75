// SPDX-License-Identifier: MIT
#include "generator/bench_builder.h"

#include <algorithm>
#include <utility>

#include "core/base/error.h"

namespace etb::gen {

trace::Node& NodeBuilder::node() { return b_.trace().nodes[index_]; }

NodeBuilder& NodeBuilder::in(Value v) {
  node().inputs.push_back(std::move(v));
  return *this;
}

NodeBuilder& NodeBuilder::out(Value v) {
  node().outputs.push_back(std::move(v));
  return *this;
}

NodeBuilder& NodeBuilder::attr(std::string_view name, std::string_view type, Value v) {
  trace::Attr a;
  a.name = b_.str(name);
  a.type = b_.str(type);
  a.value = std::move(v);
  node().attrs.push_back(std::move(a));
  return *this;
}

NodeBuilder& NodeBuilder::time(double start_us, double dur_us, double gpu_dur_us) {
  trace::Node& n = node();
  n.start_us = start_us;
  n.dur_us = dur_us;
  n.gpu_dur_us = gpu_dur_us;
  return *this;
}

NodeBuilder& NodeBuilder::rf(uint64_t rf_id, uint64_t fw_parent, int64_t seq_id, uint32_t scope,
                             uint64_t tid, uint64_t fw_tid) {
  trace::Node& n = node();
  n.rf_id = rf_id;
  n.fw_parent = fw_parent;
  n.seq_id = seq_id;
  n.scope = scope;
  n.tid = tid;
  n.fw_tid = fw_tid;
  return *this;
}

NodeBuilder& NodeBuilder::parent(uint64_t id) {
  node().parent = id;
  return *this;
}

NodeBuilder& NodeBuilder::chakraType(uint8_t type) {
  node().chakra_type = type;
  return *this;
}

NodeBuilder& NodeBuilder::comm(int32_t comm_index) {
  node().comm = comm_index;
  return *this;
}

TensorIx TraceBuilder::tensor(uint64_t tensor_id, uint64_t storage_id, uint64_t offset,
                              uint64_t numel, uint32_t itemsize, DType dtype,
                              std::string_view device, const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& strides, bool has_device,
                              bool has_strides) {
  trace::TensorRef r;
  r.tensor_id = tensor_id;
  r.storage_id = storage_id;
  r.offset = offset;
  r.numel = numel;
  r.itemsize = itemsize;
  r.dtype = dtype;
  r.has_device = has_device;
  r.has_strides = has_strides;
  r.device = str(device);
  r.shape = t_.lists.intern(shape);
  r.strides = t_.lists.intern(strides);
  t_.tensors.push_back(r);
  return static_cast<TensorIx>(t_.tensors.size() - 1);
}

Value TraceBuilder::value(trace::ValueKind kind, std::string_view type) {
  Value v;
  v.kind = kind;
  v.type = str(type);
  return v;
}

Value TraceBuilder::none(std::string_view type) { return value(trace::ValueKind::kNone, type); }

Value TraceBuilder::i(int64_t x, std::string_view type) {
  Value v = value(trace::ValueKind::kInt, type);
  v.i = x;
  return v;
}

Value TraceBuilder::d(double x, std::string_view type) {
  Value v = value(trace::ValueKind::kDouble, type);
  v.d = x;
  return v;
}

Value TraceBuilder::b(bool x, std::string_view type) {
  Value v = value(trace::ValueKind::kBool, type);
  v.b = x;
  return v;
}

Value TraceBuilder::s(std::string_view x, std::string_view type) {
  Value v = value(trace::ValueKind::kString, type);
  v.s = str(x);
  return v;
}

Value TraceBuilder::dev(std::string_view x, std::string_view type) {
  Value v = value(trace::ValueKind::kDevice, type);
  v.s = str(x);
  return v;
}

Value TraceBuilder::opaque(std::string_view x, std::string_view type) {
  Value v = value(trace::ValueKind::kOpaque, type);
  v.s = str(x);
  return v;
}

Value TraceBuilder::t(TensorIx tensor, std::string_view type) {
  Value v = value(trace::ValueKind::kTensor, type);
  v.tensor = tensor;
  return v;
}

Value TraceBuilder::list(std::initializer_list<Value> items, std::string_view type) {
  Value v = value(trace::ValueKind::kList, type);
  v.items.assign(items.begin(), items.end());
  return v;
}

Value TraceBuilder::tuple(std::initializer_list<Value> items, std::string_view type) {
  Value v = value(trace::ValueKind::kTuple, type);
  v.items.assign(items.begin(), items.end());
  return v;
}

int32_t TraceBuilder::addComm(const CommInfo& info) {
  t_.comms.push_back(info);
  return static_cast<int32_t>(t_.comms.size() - 1);
}

NodeBuilder TraceBuilder::op(uint64_t id, std::string_view name, std::string_view schema,
                             NodeKind kind) {
  ETB_CHECK(t_.nodes.empty() || t_.nodes.back().id < id, "node ", id, " out of order");
  trace::Node n;
  n.id = id;
  n.name = str(name);
  n.op_schema = str(schema);
  n.kind = kind;
  t_.nodes.push_back(std::move(n));
  return NodeBuilder(*this, t_.nodes.size() - 1);
}

void TraceBuilder::structure(const StructureNode* nodes, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    trace::Node n;
    n.id = nodes[i].id;
    n.parent = nodes[i].parent;
    n.kind = nodes[i].kind;
    n.tid = nodes[i].tid;
    n.start_us = nodes[i].start_us;
    n.dur_us = nodes[i].dur_us;
    n.name = str(nodes[i].name);
    t_.nodes.push_back(std::move(n));
  }
  std::stable_sort(t_.nodes.begin(), t_.nodes.end(),
                   [](const trace::Node& a, const trace::Node& b) { return a.id < b.id; });
  for (size_t i = 1; i < t_.nodes.size(); ++i) {
    ETB_CHECK(t_.nodes[i - 1].id != t_.nodes[i].id, "node ", t_.nodes[i].id, " added twice");
  }
}

void TraceBuilder::processGroup(std::string_view name, std::string_view desc,
                                std::string_view backend, std::vector<int64_t> ranks,
                                int64_t size) {
  trace::ProcessGroup pg;
  pg.name = std::string(name);
  pg.desc = std::string(desc);
  pg.backend = std::string(backend);
  pg.ranks = std::move(ranks);
  pg.size = size;
  t_.process_groups.push_back(std::move(pg));
}

void TraceBuilder::iteration(uint64_t marker, uint64_t begin, uint64_t end, std::string_view name,
                             double start_us, double dur_us) {
  trace::Iteration it;
  it.marker = marker;
  it.begin = begin;
  it.end = end;
  it.name = std::string(name);
  it.start_us = start_us;
  it.dur_us = dur_us;
  t_.iterations.push_back(std::move(it));
}

}  // namespace etb::gen
