// SPDX-License-Identifier: MIT
#include "core/model/trace_compare.h"

#include <cmath>
#include <sstream>

namespace etb::trace {
namespace {

class Differ {
 public:
  Differ(const Trace& a, const Trace& b, const DiffOptions& o) : a_(a), b_(b), o_(o) {}

  std::string run() {
    if (o_.header) header();
    if (a_.nodes.size() != b_.nodes.size()) {
      add("", "node count ", a_.nodes.size(), " vs ", b_.nodes.size());
    }
    const size_t n = std::min(a_.nodes.size(), b_.nodes.size());
    for (size_t i = 0; i < n && !full(); ++i) node(a_.nodes[i], b_.nodes[i]);
    if (o_.comms) groups();
    iterations();
    return out_.str();
  }

 private:
  bool full() const { return count_ >= o_.max_diffs; }

  template <typename... Parts>
  void add(const std::string& where, const Parts&... parts) {
    if (full()) return;
    ++count_;
    out_ << where << (where.empty() ? "" : ": ");
    (out_ << ... << parts);
    out_ << "\n";
  }

  template <typename T>
  void eq(const std::string& where, const char* what, const T& x, const T& y) {
    if (!(x == y)) add(where, what, " ", x, " vs ", y);
  }

  void header() {
    eq("", "pid", a_.pid, b_.pid);
    eq("", "time", a_.time, b_.time);
    eq("", "start_ts", a_.start_ts, b_.start_ts);
    eq("", "finish_ts", a_.finish_ts, b_.finish_ts);
    eq("", "rank", a_.rank, b_.rank);
    eq("", "world_size", a_.world_size, b_.world_size);
  }

  void node(const Node& x, const Node& y) {
    const std::string w = "node " + std::to_string(x.id);
    eq(w, "id", x.id, y.id);
    eq(w, "name", std::string(a_.name(x)), std::string(b_.name(y)));
    eq(w, "kind", std::string(nodeKindName(x.kind)), std::string(nodeKindName(y.kind)));
    eq(w, "parent", x.parent, y.parent);
    eq(w, "data_deps count", x.data_deps.size(), y.data_deps.size());
    eq(w, "rf_id", x.rf_id, y.rf_id);
    eq(w, "fw_parent", x.fw_parent, y.fw_parent);
    eq(w, "seq_id", x.seq_id, y.seq_id);
    eq(w, "scope", x.scope, y.scope);
    eq(w, "tid", x.tid, y.tid);
    eq(w, "fw_tid", x.fw_tid, y.fw_tid);
    eq(w, "op_schema", std::string(a_.str(x.op_schema)), std::string(b_.str(y.op_schema)));
    eq(w, "chakra_type", static_cast<int>(x.chakra_type), static_cast<int>(y.chakra_type));
    timing(w, "start_us", x.start_us, y.start_us);
    timing(w, "dur_us", x.dur_us, y.dur_us);
    timing(w, "gpu_dur_us", x.gpu_dur_us, y.gpu_dur_us);
    values(w + ": input", x.inputs, y.inputs);
    values(w + ": output", x.outputs, y.outputs);
    if (o_.attrs) attrs(w, x, y);
    if (o_.comms) comm(w, x, y);
  }

  // Times are written as recorded; NaN (never expected) equals NaN.
  void timing(const std::string& w, const char* what, double x, double y) {
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) add(w, what, " ", x, " vs ", y);
  }

  void values(const std::string& w, const std::vector<Value>& x, const std::vector<Value>& y) {
    if (x.size() != y.size()) return add(w, "s: count ", x.size(), " vs ", y.size());
    for (size_t i = 0; i < x.size(); ++i) value(w + " " + std::to_string(i), x[i], y[i]);
  }

  void value(const std::string& w, const Value& x, const Value& y) {
    if (x.kind != y.kind) {
      return add(w, "kind ", static_cast<int>(x.kind), " vs ", static_cast<int>(y.kind));
    }
    if (o_.value_types) eq(w, "type", std::string(a_.str(x.type)), std::string(b_.str(y.type)));
    switch (x.kind) {
      case ValueKind::kInt: return eq(w, "int", x.i, y.i);
      case ValueKind::kDouble:
        if (!(x.d == y.d || (std::isnan(x.d) && std::isnan(y.d)))) add(w, "double ", x.d, " vs ", y.d);
        return;
      case ValueKind::kBool: return eq(w, "bool", x.b, y.b);
      case ValueKind::kString:
      case ValueKind::kDevice:
      case ValueKind::kOpaque:
        return eq(w, "string", std::string(a_.str(x.s)), std::string(b_.str(y.s)));
      case ValueKind::kTensor: return tensor(w, a_.tensors[x.tensor], b_.tensors[y.tensor]);
      case ValueKind::kList:
      case ValueKind::kTuple: return values(w + " item", x.items, y.items);
      case ValueKind::kNone: return;
    }
  }

  void tensor(const std::string& w, const TensorRef& x, const TensorRef& y) {
    eq(w, "tensor_id", x.tensor_id, y.tensor_id);
    eq(w, "storage_id", x.storage_id, y.storage_id);
    eq(w, "offset", x.offset, y.offset);
    eq(w, "numel", x.numel, y.numel);
    eq(w, "itemsize", x.itemsize, y.itemsize);
    eq(w, "dtype", std::string(dtypeName(x.dtype)), std::string(dtypeName(y.dtype)));
    eq(w, "has_device", x.has_device, y.has_device);
    eq(w, "device", std::string(a_.str(x.device)), std::string(b_.str(y.device)));
    eq(w, "shape", list(a_.list(x.shape)), list(b_.list(y.shape)));
    eq(w, "has_strides", x.has_strides, y.has_strides);
    eq(w, "strides", list(a_.list(x.strides)), list(b_.list(y.strides)));
  }

  static std::string list(const std::vector<int64_t>& l) {
    std::string s = "[";
    for (size_t i = 0; i < l.size(); ++i) s += (i ? "," : "") + std::to_string(l[i]);
    return s + "]";
  }

  void attrs(const std::string& w, const Node& x, const Node& y) {
    if (x.attrs.size() != y.attrs.size()) return add(w, "attr count ", x.attrs.size(), " vs ", y.attrs.size());
    for (size_t i = 0; i < x.attrs.size(); ++i) {
      const Attr& p = x.attrs[i];
      const Attr& q = y.attrs[i];
      const std::string aw = w + ": attr " + std::string(a_.str(p.name));
      eq(aw, "name", std::string(a_.str(p.name)), std::string(b_.str(q.name)));
      eq(aw, "type", std::string(a_.str(p.type)), std::string(b_.str(q.type)));
      value(aw, p.value, q.value);
    }
  }

  void comm(const std::string& w, const Node& x, const Node& y) {
    if ((x.comm < 0) != (y.comm < 0)) return add(w, "comm present ", x.comm >= 0, " vs ", y.comm >= 0);
    if (x.comm < 0) return;
    const CommInfo& p = a_.comms[static_cast<size_t>(x.comm)];
    const CommInfo& q = b_.comms[static_cast<size_t>(y.comm)];
    const std::string cw = w + ": comm";
    eq(cw, "type", std::string(commTypeName(p.type)), std::string(commTypeName(q.type)));
    eq(cw, "pg", p.pg, q.pg);
    eq(cw, "pg_name", std::string(a_.str(p.pg_name)), std::string(b_.str(q.pg_name)));
    eq(cw, "seq", p.seq, q.seq);
    eq(cw, "is_p2p", p.is_p2p, q.is_p2p);
    eq(cw, "is_async", p.is_async, q.is_async);
    eq(cw, "dtype", std::string(dtypeName(p.dtype)), std::string(dtypeName(q.dtype)));
    eq(cw, "in_elems", p.in_elems, q.in_elems);
    eq(cw, "out_elems", p.out_elems, q.out_elems);
    eq(cw, "in_splits", list(p.in_splits), list(q.in_splits));
    eq(cw, "out_splits", list(p.out_splits), list(q.out_splits));
    eq(cw, "root", p.root, q.root);
    eq(cw, "peer", p.peer, q.peer);
    eq(cw, "bytes", p.bytes, q.bytes);
    eq(cw, "reduce_op", static_cast<int>(p.reduce_op), static_cast<int>(q.reduce_op));
  }

  void groups() {
    if (a_.process_groups.size() != b_.process_groups.size()) {
      return add("", "process group count ", a_.process_groups.size(), " vs ", b_.process_groups.size());
    }
    for (size_t i = 0; i < a_.process_groups.size(); ++i) {
      const ProcessGroup& p = a_.process_groups[i];
      const ProcessGroup& q = b_.process_groups[i];
      const std::string w = "process group " + std::to_string(i);
      eq(w, "name", p.name, q.name);
      eq(w, "desc", p.desc, q.desc);
      eq(w, "backend", p.backend, q.backend);
      eq(w, "ranks", list(p.ranks), list(q.ranks));
      eq(w, "size", p.size, q.size);
    }
  }

  void iterations() {
    if (a_.iterations.size() != b_.iterations.size()) {
      return add("", "iteration count ", a_.iterations.size(), " vs ", b_.iterations.size());
    }
    for (size_t i = 0; i < a_.iterations.size(); ++i) {
      const std::string w = "iteration " + std::to_string(i);
      eq(w, "begin", a_.iterations[i].begin, b_.iterations[i].begin);
      eq(w, "end", a_.iterations[i].end, b_.iterations[i].end);
    }
  }

  const Trace& a_;
  const Trace& b_;
  const DiffOptions& o_;
  std::ostringstream out_;
  size_t count_ = 0;
};

}  // namespace

std::string diffTraces(const Trace& a, const Trace& b, const DiffOptions& options) {
  return Differ(a, b, options).run();
}

}  // namespace etb::trace
