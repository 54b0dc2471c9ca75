// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_writer.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/chakra/chakra_attrs.h"
#include "core/chakra/chakra_extras.h"
#include "core/chakra/chakra_graph.h"
#include "core/chakra/chakra_names.h"
#include "core/chakra/chakra_values.h"
#include "core/base/file_io.h"
#include "schemas/et_def.pb.h"

namespace etb::trace {
namespace {
namespace pb = ChakraProtoMsg;
using chakra::attrToProto;

void appendFramed(std::string* out, const google::protobuf::Message& m) {
  const size_t len = m.ByteSizeLong();
  uint64_t v = len;
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
  const size_t at = out->size();
  out->resize(at + len);
  m.SerializeToArray(out->data() + at, static_cast<int>(len));
}

void writeMetadata(const Trace& t, bool sched_deps, std::string* out) {
  pb::GlobalMetadata md;
  md.set_version("0.0.4");
  chakra::setString(md.add_attr(), "schema", t.schema);
  chakra::setUint64(md.add_attr(), "pid", static_cast<uint64_t>(t.pid));
  chakra::setString(md.add_attr(), "time", t.time);
  chakra::setUint64(md.add_attr(), "start_ts", t.start_ts);
  chakra::setUint64(md.add_attr(), "finish_ts", t.finish_ts);
  for (const Attr& a : t.metadata_attrs) attrToProto(t, a, md.add_attr());
  chakra::setString(md.add_attr(), chakra::kEtbTrace, chakra::traceExtrasToJson(t));
  if (sched_deps) chakra::setBool(md.add_attr(), chakra::kEtbSchedDeps, true);
  appendFramed(out, md);
}

int chakraType(const Trace& t, const Node& n) {
  if (n.chakra_type >= pb::METADATA_NODE && n.chakra_type <= pb::COMM_COLL_NODE) {
    return n.chakra_type;
  }
  const CommInfo* c = n.comm >= 0 ? &t.comms[static_cast<size_t>(n.comm)] : nullptr;
  switch (n.kind) {
    case NodeKind::kMetadata: return pb::METADATA_NODE;
    case NodeKind::kMemory: return pb::MEM_LOAD_NODE;
    case NodeKind::kPointToPoint:
      return c != nullptr && c->type == CommType::kRecv ? pb::COMM_RECV_NODE : pb::COMM_SEND_NODE;
    case NodeKind::kCollective:
      // Only what a simulator can run as a collective becomes COMM_COLL.
      return c != nullptr && chakra::chakraCommType(c->type) >= 0 ? pb::COMM_COLL_NODE
                                                                   : pb::COMP_NODE;
    default: return pb::COMP_NODE;
  }
}

uint64_t tensorBytes(const Trace& t, const std::vector<Value>& vals) {
  uint64_t sum = 0;
  for (const Value& v : vals) {
    if (v.kind == ValueKind::kTensor) {
      const TensorRef& r = t.tensors[v.tensor];
      sum += r.numel * r.itemsize;
    }
    sum += tensorBytes(t, v.items);
  }
  return sum;
}

// Builds the emitted dependencies: ctrl_deps = the parent, data_deps = the
// explicit ones plus, when the trace has none (a PyTorch ET), a per-thread
// chain of top-level ops so that a simulator runs them in order.
class DepPlan {
 public:
  explicit DepPlan(const Trace& t) : t_(t) {
    bool explicit_deps = false;
    for (const Node& n : t.nodes) explicit_deps = explicit_deps || !n.data_deps.empty();
    sched_ = !explicit_deps;
    data_.resize(t.nodes.size());
    std::unordered_map<uint64_t, NodeId> last_top;
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      const Node& n = t.nodes[i];
      for (NodeId d : n.data_deps) add(i, d);
      if (!sched_ || n.kind == NodeKind::kRoot || !topLevel(n)) continue;
      const auto it = last_top.find(n.tid);
      if (it != last_top.end()) add(i, it->second);
      last_top[n.tid] = n.id;
    }
  }
  bool sched() const { return sched_; }
  const std::vector<NodeId>& data(size_t i) const { return data_[i]; }
  bool valid(const Node& n, NodeId d) const { return d != n.id && t_.find(d) != nullptr; }

 private:
  bool topLevel(const Node& n) const {
    if (n.parent == 0 || n.parent == n.id) return true;
    const Node* p = t_.find(n.parent);
    return p == nullptr || p->kind == NodeKind::kRoot;
  }
  void add(size_t i, NodeId d) {
    const Node& n = t_.nodes[i];
    if (!valid(n, d)) return;
    if (std::find(data_[i].begin(), data_[i].end(), d) == data_[i].end()) data_[i].push_back(d);
  }
  const Trace& t_;
  bool sched_ = false;
  std::vector<std::vector<NodeId>> data_;
};

class NodeWriter {
 public:
  NodeWriter(const Trace& t, const DepPlan& plan) : t_(t), plan_(plan) {}

  void write(size_t i, pb::Node* pn) {
    const Node& n = t_.nodes[i];
    synth_.clear();
    pn->Clear();
    pn->set_id(n.id);
    pn->set_name(std::string(t_.name(n)));
    const int type = chakraType(t_, n);
    pn->set_type(static_cast<pb::NodeType>(type));
    if (n.chakra_type == 0) synth_ += std::string(chakra::kSynthType) + ",";
    deps(i, pn);
    timing(n, pn);
    fields(n, pn);
    attrs(n, type, pn);
    io(n, pn);
    if (!synth_.empty()) chakra::setString(pn->add_attr(), chakra::kEtbSynth, synth_);
    chakra::setString(pn->add_attr(), chakra::kEtbKind, nodeKindName(n.kind));
  }

 private:
  void deps(size_t i, pb::Node* pn) {
    const Node& n = t_.nodes[i];
    if (n.parent != 0 && plan_.valid(n, n.parent)) {
      pn->add_ctrl_deps(n.parent);
    } else if (n.parent != 0) {
      chakra::setUint64(pn->add_attr(), chakra::kEtbParent, n.parent);
    }
    if (const Attr* extra = t_.attr(n, chakra::kCtrlDepsExtra)) {
      for (const Value& v : extra->value.items) {
        if (plan_.valid(n, static_cast<NodeId>(v.i))) pn->add_ctrl_deps(static_cast<NodeId>(v.i));
      }
    }
    for (NodeId d : plan_.data(i)) pn->add_data_deps(d);
    if (plan_.sched() && !n.data_deps.empty()) {
      pb::AttributeProto* a = pn->add_attr();
      a->set_name(chakra::kEtbDataDeps);
      for (NodeId d : n.data_deps) a->mutable_uint64_list()->add_values(d);
    }
  }

  // The proto fields hold whole microseconds; the exact value rides beside
  // them when rounding (or a zero, which reads as "unknown") would lose it.
  void timing(const Node& n, pb::Node* pn) {
    if (n.dur_us >= 0) {
      const double r = std::round(n.dur_us);
      pn->set_duration_micros(static_cast<uint64_t>(r));
      if (r != n.dur_us || r == 0) chakra::setDouble(pn->add_attr(), chakra::kEtbDur, n.dur_us);
    }
    if (n.start_us >= 0) {
      const double r = std::round(n.start_us);
      pn->set_start_time_micros(static_cast<uint64_t>(r));
      if (r != n.start_us || r == 0) chakra::setDouble(pn->add_attr(), chakra::kEtbStart, n.start_us);
    }
    if (n.gpu_dur_us >= 0) chakra::setDouble(pn->add_attr(), chakra::kEtbGpuDur, n.gpu_dur_us);
  }

  void fields(const Node& n, pb::Node* pn) {
    if (n.rf_id != 0) chakra::setUint64(pn->add_attr(), "rf_id", n.rf_id);
    if (n.fw_parent != 0) chakra::setUint64(pn->add_attr(), "fw_parent", n.fw_parent);
    if (n.seq_id != -1) chakra::setInt64(pn->add_attr(), "seq_id", n.seq_id);
    if (n.scope != 0) chakra::setUint64(pn->add_attr(), "scope", n.scope);
    if (n.tid != 0) chakra::setUint64(pn->add_attr(), "tid", n.tid);
    if (n.fw_tid != 0) chakra::setUint64(pn->add_attr(), "fw_tid", n.fw_tid);
    if (n.op_schema != 0 || n.kind == NodeKind::kLabel) {
      chakra::setString(pn->add_attr(), "op_schema", t_.str(n.op_schema));
    }
  }

  // Canonical attrs consumers read (1.6 of the Chakra notes), in the kinds
  // they expect. A node attr of the same name keeps its recorded kind but
  // takes the current value, so edits to CommInfo are not shadowed.
  void attrs(const Node& n, int type, pb::Node* pn) {
    std::vector<std::pair<std::string, Attr>> canon;
    Trace& s = scratch_;
    auto add = [&](const char* name, Value v, const char* kind) {
      Attr a;
      a.name = s.strings.intern(name);
      a.type = s.strings.intern(kind);
      a.value = v;
      a.value.type = a.type;  // what a plain read of this kind gives back
      canon.emplace_back(name, a);
    };
    const bool comm_node = type >= pb::COMM_SEND_NODE && type <= pb::COMM_COLL_NODE;
    add("is_cpu_op", makeBool(s, !comm_node && n.kind != NodeKind::kKernel), "bool");
    if (n.comm >= 0 && comm_node) commAttrs(t_.comms[static_cast<size_t>(n.comm)], type, add);
    if (n.kind == NodeKind::kOperator || n.kind == NodeKind::kMemory) {
      const uint64_t bytes = tensorBytes(t_, n.inputs) + tensorBytes(t_, n.outputs);
      if (bytes > 0) add("tensor_size", makeInt(s, static_cast<int64_t>(bytes)), "uint64");
    }
    std::unordered_set<std::string> done;
    for (const Attr& a : n.attrs) {
      const std::string name(t_.str(a.name));
      if (name == chakra::kCtrlDepsExtra || isRawIo(name)) continue;
      const auto c = std::find_if(canon.begin(), canon.end(), [&](const auto& e) { return e.first == name; });
      if (c != canon.end() && (name == "comm_type" || name == "comm_size") &&
          a.value.kind == ValueKind::kInt) {
        Attr upd = a;
        upd.value.i = c->second.value.i;
        attrToProto(t_, upd, pn->add_attr());
      } else {
        attrToProto(t_, a, pn->add_attr());
      }
      done.insert(name);
    }
    for (const auto& [name, a] : canon) {
      if (done.count(name) != 0) continue;
      attrToProto(s, a, pn->add_attr());
      synth_ += name + ",";
    }
    if (n.comm >= 0) {
      chakra::setString(pn->add_attr(), chakra::kEtbComm,
                        chakra::commToJson(t_, t_.comms[static_cast<size_t>(n.comm)]));
    }
  }

  template <typename Add>
  void commAttrs(const CommInfo& c, int type, Add& add) {
    Trace& s = scratch_;
    uint64_t bytes = c.bytes;
    if (bytes == 0) bytes = std::max(c.in_elems, c.out_elems) * static_cast<uint64_t>(dtypeSize(c.dtype));
    if (type == pb::COMM_COLL_NODE) add("comm_type", makeInt(s, chakra::chakraCommType(c.type)), "int64");
    add("comm_size", makeInt(s, static_cast<int64_t>(bytes)), "int64");
    std::string pg(t_.str(c.pg_name));
    if (pg.empty() && c.pg >= 0 && static_cast<size_t>(c.pg) < t_.process_groups.size()) {
      pg = t_.process_groups[static_cast<size_t>(c.pg)].name;
    }
    if (!pg.empty()) add("pg_name", makeString(s, pg), "string");
    if (type == pb::COMM_COLL_NODE) return;
    // Upstream leaves peers out and ASTRA-sim then talks to itself.
    const int64_t self = std::max<int64_t>(t_.rank, 0);
    const bool send = type == pb::COMM_SEND_NODE;
    add("comm_src", makeInt(s, send ? self : c.peer), "int32");
    add("comm_dst", makeInt(s, send ? c.peer : self), "int32");
    add("comm_tag", makeInt(s, 0), "int32");
  }

  static bool isRawIo(const std::string& name) {
    for (const auto& io : chakra::kRawIo) {
      for (const char* p : io) {
        if (name == p) return true;
      }
    }
    return false;
  }

  void io(const Node& n, pb::Node* pn) {
    for (int k = 0; k < 2; ++k) {
      const std::vector<Value>& vals = k == 0 ? n.inputs : n.outputs;
      pb::IOInfo* info = k == 0 ? pn->mutable_inputs() : pn->mutable_outputs();
      if (vals.empty()) {
        rawIo(n, k, info);
      } else {
        chakra::IoText text = chakra::encodeIo(t_, vals);
        info->set_values(text.values);
        info->set_shapes(text.shapes);
        info->set_types(text.types);
        if (!text.strides.empty()) chakra::setString(pn->add_attr(), chakra::kEtbStrides[k], text.strides);
        if (!text.tree.empty()) chakra::setString(pn->add_attr(), chakra::kEtbTree[k], text.tree);
      }
      if (info->values().empty() && info->shapes().empty() && info->types().empty()) {
        k == 0 ? pn->clear_inputs() : pn->clear_outputs();
      }
    }
  }

  // IOInfo strings our reader could not parse come back verbatim.
  void rawIo(const Node& n, int k, pb::IOInfo* info) {
    for (int p = 0; p < 3; ++p) {
      const Attr* a = t_.attr(n, chakra::kRawIo[k][p]);
      if (a == nullptr || a->value.kind != ValueKind::kString) continue;
      const std::string v(t_.str(a->value.s));
      p == 0 ? info->set_values(v) : p == 1 ? info->set_shapes(v) : info->set_types(v);
    }
  }

  const Trace& t_;
  const DepPlan& plan_;
  Trace scratch_;
  std::string synth_;
};

void checkWritable(const Trace& t, const DepPlan& plan, const std::string& where) {
  std::vector<NodeId> ids;
  std::vector<std::vector<NodeId>> deps(t.nodes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    if (i > 0 && n.id <= t.nodes[i - 1].id) {
      SourceLoc loc{where, 0, n.id, std::string(t.name(n))};
      ETB_INPUT_ERROR(loc, "node ids must be unique and sorted to write Chakra (call finalize())");
    }
    ids.push_back(n.id);
    deps[i] = plan.data(i);
    if (n.parent != 0 && plan.valid(n, n.parent)) deps[i].push_back(n.parent);
  }
  if (const auto bad = chakra::findCycle(ids, deps)) {
    SourceLoc loc{where, 0, *bad, ""};
    ETB_INPUT_ERROR(loc, "dependency cycle through this node; cannot write Chakra");
  }
}
}  // namespace

std::string writeChakraBytes(const Trace& trace) {
  const DepPlan plan(trace);
  checkWritable(trace, plan, trace.path);
  std::string out;
  writeMetadata(trace, plan.sched(), &out);
  NodeWriter writer(trace, plan);
  pb::Node pn;
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    writer.write(i, &pn);
    appendFramed(&out, pn);
  }
  return out;
}

void writeChakra(const Trace& trace, const std::string& path) {
  writeFileMaybeGzip(path, writeChakraBytes(trace));
}

}  // namespace etb::trace
