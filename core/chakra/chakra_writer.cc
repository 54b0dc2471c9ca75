// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_writer.h"

#include <algorithm>
#include <cmath>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/chakra/chakra_attrs.h"
#include "core/chakra/chakra_consumer.h"
#include "core/chakra/chakra_extras.h"
#include "core/chakra/chakra_graph.h"
#include "core/chakra/chakra_names.h"
#include "core/chakra/chakra_node_attrs.h"
#include "core/chakra/chakra_schedule.h"
#include "core/chakra/chakra_values.h"
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

bool isCommType(int type) { return type >= pb::COMM_SEND_NODE && type <= pb::COMM_COLL_NODE; }

// The node type a simulator gets, and the substitution made, if any.
int chakraType(const Trace& t, const Node& n, std::string* remap) {
  const bool comm_kind = n.kind == NodeKind::kCollective || n.kind == NodeKind::kPointToPoint;
  if (n.comm >= 0 && (comm_kind || isCommType(n.chakra_type))) {
    const chakra::CommPlacement p = chakra::placeComm(t.comms[static_cast<size_t>(n.comm)]);
    *remap = p.remap;
    return p.node_type;
  }
  if (isCommType(n.chakra_type)) {
    *remap = "comm node without comm attrs->COMP";
    return pb::COMP_NODE;
  }
  if (comm_kind && n.comm < 0) {  // counted, never sized (torch 1.13's gloo:all_to_all)
    *remap = "collective without sizes->COMP";
    return pb::COMP_NODE;
  }
  if (n.chakra_type >= pb::METADATA_NODE && n.chakra_type <= pb::COMP_NODE) return n.chakra_type;
  if (n.kind == NodeKind::kMetadata) return pb::METADATA_NODE;
  if (n.kind == NodeKind::kMemory) return pb::MEM_LOAD_NODE;
  return pb::COMP_NODE;
}

class NodeWriter {
 public:
  NodeWriter(const Trace& t, const chakra::Schedule& sched, const ChakraWriteOptions& options,
             ChakraWriteReport* report)
      : t_(t), sched_(sched), attrs_(t, options, report), report_(report) {}

  void write(size_t i, pb::Node* pn) {
    const Node& n = t_.nodes[i];
    synth_.clear();
    pn->Clear();
    pn->set_id(n.id);
    pn->set_name(std::string(t_.name(n)));
    std::string remap;
    const int type = chakraType(t_, n, &remap);
    pn->set_type(static_cast<pb::NodeType>(type));
    if (n.chakra_type == 0) synth_ += std::string(chakra::kSynthType) + ",";
    if (n.chakra_type != 0 && n.chakra_type != type) {
      chakra::setUint64(pn->add_attr(), chakra::kEtbOrigType, n.chakra_type);
    }
    deps(i, pn);
    timing(i, pn);
    fields(n, pn);
    attrs_.write(n, type, pn, &synth_);
    if (n.comm >= 0) {
      chakra::setString(pn->add_attr(), chakra::kEtbComm,
                        chakra::commToJson(t_, t_.comms[static_cast<size_t>(n.comm)]));
    }
    io(n, pn);
    if (!synth_.empty()) chakra::setString(pn->add_attr(), chakra::kEtbSynth, synth_);
    chakra::setString(pn->add_attr(), chakra::kEtbKind, nodeKindName(n.kind));
    count(n, type, remap, *pn);
  }

 private:
  void count(const Node& n, int type, const std::string& remap, const pb::Node& pn) {
    if (report_ == nullptr) return;
    ++report_->nodes;
    if (!remap.empty()) ++report_->remapped[remap];
    report_->comm_nodes += isCommType(type) ? 1 : 0;
    report_->timed_nodes += pn.duration_micros() > 0 ? 1 : 0;
    report_->data_deps += static_cast<size_t>(pn.data_deps_size());
    report_->ready_at_start += chakra::isScheduled(n) && pn.data_deps_size() == 0 ? 1 : 0;
  }

  void deps(size_t i, pb::Node* pn) {
    const Node& n = t_.nodes[i];
    if (sched_.ctrl[i]) {
      pn->add_ctrl_deps(n.parent);
    } else if (n.parent != 0) {
      chakra::setUint64(pn->add_attr(), chakra::kEtbParent, n.parent);
    }
    if (const Attr* extra = t_.attr(n, chakra::kCtrlDepsExtra)) {
      for (const Value& v : extra->value.items) {
        const NodeId d = static_cast<NodeId>(v.i);
        const bool ok = d != n.id && t_.find(d) != nullptr && (!sched_.synthesized || d < n.id);
        if (ok) pn->add_ctrl_deps(d);
      }
    }
    for (NodeId d : sched_.data[i]) pn->add_data_deps(d);
    if (sched_.synthesized && !n.data_deps.empty()) {
      pb::AttributeProto* a = pn->add_attr();
      a->set_name(chakra::kEtbDataDeps);
      for (NodeId d : n.data_deps) a->mutable_uint64_list()->add_values(d);
    }
  }

  // duration_micros is what a simulator runs (chakra_schedule.h); the exact
  // recorded time rides beside it whenever that is not the same number.
  void timing(size_t i, pb::Node* pn) {
    const Node& n = t_.nodes[i];
    const int64_t w = sched_.micros[i];
    if (w > 0) pn->set_duration_micros(static_cast<uint64_t>(w));
    if (n.dur_us >= 0 && (static_cast<double>(w) != n.dur_us || n.dur_us == 0)) {
      chakra::setDouble(pn->add_attr(), chakra::kEtbDur, n.dur_us);
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
  const chakra::Schedule& sched_;
  chakra::NodeAttrWriter attrs_;
  ChakraWriteReport* report_;
  std::string synth_;
};

void checkWritable(const Trace& t, const chakra::Schedule& sched, const std::string& where) {
  std::vector<NodeId> ids;
  std::vector<std::vector<NodeId>> deps(t.nodes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    if (i > 0 && n.id <= t.nodes[i - 1].id) {
      SourceLoc loc{where, 0, n.id, std::string(t.name(n))};
      ETB_INPUT_ERROR(loc, "node ids must be unique and sorted to write Chakra (call finalize())");
    }
    ids.push_back(n.id);
    deps[i] = sched.data[i];
    if (sched.ctrl[i]) deps[i].push_back(n.parent);
  }
  if (const auto bad = chakra::findCycle(ids, deps)) {
    SourceLoc loc{where, 0, *bad, ""};
    ETB_INPUT_ERROR(loc, "dependency cycle through this node; cannot write Chakra");
  }
}

void writeKernel(const Trace& t, const chakra::KernelNode& k, pb::Node* pn, ChakraWriteReport* report) {
  const KernelEvent& e = t.kernels[k.kernel];
  pn->Clear();
  pn->set_id(k.id);
  pn->set_name(std::string(t.str(e.name)));
  pn->set_type(pb::COMP_NODE);
  for (NodeId d : k.data) pn->add_data_deps(d);
  if (k.micros > 0) pn->set_duration_micros(static_cast<uint64_t>(k.micros));
  chakra::setBool(pn->add_attr(), "is_cpu_op", false);
  chakra::setInt64(pn->add_attr(), "stream", e.stream);
  chakra::setBool(pn->add_attr(), chakra::kEtbKernelNode, true);
  if (report == nullptr) return;
  ++report->nodes;
  ++report->gpu_kernels;
  report->timed_nodes += k.micros > 0 ? 1 : 0;
  report->data_deps += k.data.size();
}

// Group ids from this trace alone, when the caller has no set-wide map.
std::map<std::string, std::string> ownPgIds(const Trace& t) {
  std::vector<std::string> keys;
  for (const CommInfo& c : t.comms) keys.push_back(chakra::pgKey(t, c));
  return chakra::assignPgIds(keys);
}
}  // namespace

std::string writeChakraBytes(const Trace& trace, const ChakraWriteOptions& options,
                             ChakraWriteReport* report) {
  const chakra::Schedule sched = chakra::planSchedule(trace);
  checkWritable(trace, sched, trace.path);
  ChakraWriteOptions own;
  if (options.pg_ids.empty()) own.pg_ids = ownPgIds(trace);
  const ChakraWriteOptions& opts = options.pg_ids.empty() ? own : options;
  std::string out;
  writeMetadata(trace, sched.synthesized, &out);
  NodeWriter writer(trace, sched, opts, report);
  pb::Node pn;
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    writer.write(i, &pn);
    appendFramed(&out, pn);
  }
  for (const chakra::KernelNode& k : sched.kernels) {
    writeKernel(trace, k, &pn, report);
    appendFramed(&out, pn);
  }
  return out;
}

void writeChakra(const Trace& trace, const std::string& path, const ChakraWriteOptions& options,
                 ChakraWriteReport* report) {
  writeFileMaybeGzip(path, writeChakraBytes(trace, options, report));
}

}  // namespace etb::trace
