// SPDX-License-Identifier: MIT
//
// What generated benchmark programs use to rebuild their recorded iteration
// as a trace::Trace in code, one readable statement per operator. The Trace
// then goes to the same replayTrace() et_replay calls. This file is copied
// into every generated folder (it is one of the embedded runtime files).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "core/model/trace.h"

// A string literal with its exact length (it may hold "\x00" bytes).
#define ETB_S(lit) std::string_view(lit, sizeof(lit) - 1)

namespace etb::gen {

using trace::CommInfo;
using trace::CommType;
using trace::DType;
using trace::NodeKind;
using trace::ReduceOp;
using trace::Value;

// A recorded tensor (the ET 6-tuple, shape and strides), by index.
using TensorIx = uint32_t;

class TraceBuilder;

// A node kept for the replay modes without arguments (labels, the iteration's
// marker, events between the ops; generator/emit_structure.h).
struct StructureNode {
  uint64_t id;
  uint64_t parent;
  NodeKind kind;
  uint64_t tid;
  double start_us, dur_us;
  std::string_view name;
};

// Fills one node; returned by TraceBuilder::op and chained.
class NodeBuilder {
 public:
  NodeBuilder(TraceBuilder& b, size_t index) : b_(b), index_(index) {}
  NodeBuilder& in(Value v);
  NodeBuilder& out(Value v);
  NodeBuilder& attr(std::string_view name, std::string_view type, Value v);
  // Recorded timing in microseconds (negative = unknown).
  NodeBuilder& time(double start_us, double dur_us, double gpu_dur_us = -1);
  // Record-function fields, kept so nothing the replayer may read is lost.
  NodeBuilder& rf(uint64_t rf_id, uint64_t fw_parent, int64_t seq_id, uint32_t scope,
                  uint64_t tid, uint64_t fw_tid);
  NodeBuilder& chakraType(uint8_t type);
  // The call-stack parent the trace keeps (a label, another replayed node).
  NodeBuilder& parent(uint64_t id);
  NodeBuilder& comm(int32_t comm_index);

 private:
  trace::Node& node();
  TraceBuilder& b_;
  size_t index_;
};

class TraceBuilder {
 public:
  explicit TraceBuilder(trace::Trace& t) : t_(t) {}

  trace::Trace& trace() { return t_; }
  trace::StrId str(std::string_view s) { return t_.strings.intern(s); }

  TensorIx tensor(uint64_t tensor_id, uint64_t storage_id, uint64_t offset, uint64_t numel,
                  uint32_t itemsize, DType dtype, std::string_view device,
                  const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                  bool has_device = true, bool has_strides = true);

  Value none(std::string_view type);
  Value i(int64_t v, std::string_view type);
  Value d(double v, std::string_view type);
  Value b(bool v, std::string_view type);
  Value s(std::string_view v, std::string_view type);
  Value dev(std::string_view v, std::string_view type);
  Value opaque(std::string_view v, std::string_view type);
  Value t(TensorIx tensor, std::string_view type);
  Value list(std::initializer_list<Value> items, std::string_view type);
  Value tuple(std::initializer_list<Value> items, std::string_view type);

  // A new collective / p2p description; returns its index for .comm().
  int32_t addComm(const CommInfo& info);

  // Appends a node; ids must be added in increasing order.
  NodeBuilder op(uint64_t id, std::string_view name, std::string_view schema,
                 NodeKind kind = NodeKind::kOperator);

  // Adds the kept nodes (after every op) and sorts the nodes by id.
  void structure(const StructureNode* nodes, size_t count);

  void processGroup(std::string_view name, std::string_view desc, std::string_view backend,
                    std::vector<int64_t> ranks, int64_t size);
  void iteration(uint64_t marker, uint64_t begin, uint64_t end, std::string_view name,
                 double start_us, double dur_us);

 private:
  Value value(trace::ValueKind kind, std::string_view type);
  trace::Trace& t_;
};

}  // namespace etb::gen
