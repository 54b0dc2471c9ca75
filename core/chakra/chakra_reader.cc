// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_reader.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "core/base/error.h"
#include "core/chakra/chakra_attrs.h"
#include "core/chakra/chakra_extras.h"
#include "core/chakra/chakra_deps.h"
#include "core/chakra/chakra_graph.h"
#include "core/chakra/chakra_names.h"
#include "core/chakra/chakra_values.h"
#include "core/base/file_io.h"
#include "schemas/et_def.pb.h"

namespace etb::trace {
namespace {
using chakra::protoInt;
using chakra::protoString;
namespace pb = ChakraProtoMsg;

// Splits the varint32-length-delimited stream. Every failure names the
// message index (0 = GlobalMetadata) since a binary file has no lines.
class Framer {
 public:
  Framer(const std::string& bytes, const std::string& file) : b_(bytes), file_(file) {}
  bool done() const { return pos_ >= b_.size(); }
  size_t pos() const { return pos_; }
  size_t index() const { return index_; }

  std::string_view next() {
    uint64_t len = 0;
    int shift = 0;
    while (true) {
      if (pos_ >= b_.size()) fail("length prefix cut off by end of file");
      const uint8_t c = static_cast<uint8_t>(b_[pos_++]);
      len |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) break;
      shift += 7;
      if (shift > 28) fail("length prefix is not a valid varint32");
    }
    if (len > b_.size() - pos_) {
      fail("message of ", len, " bytes runs past end of file (", b_.size() - pos_,
           " bytes left)");
    }
    std::string_view msg(b_.data() + pos_, len);
    pos_ += len;
    ++index_;
    return msg;
  }

  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    SourceLoc loc{file_, 0, SourceLoc::kNoNode, ""};
    ETB_INPUT_ERROR(loc, "message ", index_, " (at byte ", pos_, "): ", parts...);
  }

 private:
  const std::string& b_;
  const std::string& file_;
  size_t pos_ = 0;
  size_t index_ = 0;
};

void readMetadata(Trace& t, const pb::GlobalMetadata& md, bool* sched_deps) {
  t.schema = md.version();
  for (const pb::AttributeProto& a : md.attr()) {
    const std::string& n = a.name();
    const auto s = protoString(a);
    const auto i = protoInt(a);
    if (n == "schema" && s) {
      t.schema = std::string(*s);
    } else if (n == "pid" && i) {
      t.pid = *i;
    } else if (n == "time" && s) {
      t.time = std::string(*s);
    } else if (n == "start_ts" && i) {
      t.start_ts = static_cast<uint64_t>(*i);
    } else if (n == "finish_ts" && i) {
      t.finish_ts = static_cast<uint64_t>(*i);
    } else if (n == chakra::kEtbTrace && s) {
      chakra::traceExtrasFromJson(std::string(*s), &t);
    } else if (n == chakra::kEtbSchedDeps && i) {
      *sched_deps = *i != 0;
    } else {
      t.metadata_attrs.push_back(chakra::attrFromProto(t, a));
    }
  }
}

NodeKind kindFromType(int type, bool has_schema_attr, bool empty_schema) {
  switch (type) {
    case pb::METADATA_NODE: return NodeKind::kMetadata;
    case pb::MEM_LOAD_NODE:
    case pb::MEM_STORE_NODE: return NodeKind::kMemory;
    case pb::COMM_COLL_NODE: return NodeKind::kCollective;
    case pb::COMM_SEND_NODE:
    case pb::COMM_RECV_NODE: return NodeKind::kPointToPoint;
    case pb::COMP_NODE: return has_schema_attr && empty_schema ? NodeKind::kLabel : NodeKind::kOperator;
    default: return NodeKind::kLabel;
  }
}

// Per-node state that only the reader needs.
struct Pending {
  chakra::NodeDeps deps;
  std::optional<std::string> comm_json;
  chakra::IoText io[2];
  std::vector<Attr> raw_io;
};

class NodeReader {
 public:
  NodeReader(Trace& t, const std::string& file) : t_(t), file_(file) {}

  void read(const pb::Node& pn, size_t index, bool sched_deps, Pending* pend) {
    Node n;
    n.id = pn.id();
    n.name = t_.strings.intern(pn.name());
    n.chakra_type = static_cast<uint8_t>(pn.type());
    pend->deps.ctrl.assign(pn.ctrl_deps().begin(), pn.ctrl_deps().end());
    if (!sched_deps) n.data_deps.assign(pn.data_deps().begin(), pn.data_deps().end());
    if (pn.duration_micros() > 0) n.dur_us = static_cast<double>(pn.duration_micros());
    if (pn.start_time_micros() > 0) n.start_us = static_cast<double>(pn.start_time_micros());
    n.parent = pend->deps.ctrl.empty() ? 0 : pend->deps.ctrl[0];
    pend->io[0] = {pn.inputs().values(), pn.inputs().shapes(), pn.inputs().types(), "", ""};
    pend->io[1] = {pn.outputs().values(), pn.outputs().shapes(), pn.outputs().types(), "", ""};
    std::unordered_set<std::string> synth;
    for (const pb::AttributeProto& a : pn.attr()) {
      if (a.name() == chakra::kEtbSynth) {
        if (const auto s = protoString(a)) synth = chakra::splitNames(*s);
      }
    }
    std::string kind;
    bool has_schema = false;
    for (const pb::AttributeProto& a : pn.attr()) {
      if (!field(a, &n, pend, &kind, &has_schema) && synth.count(a.name()) == 0) {
        n.attrs.push_back(chakra::attrFromProto(t_, a));
      }
    }
    if (synth.count(chakra::kSynthType) != 0) n.chakra_type = 0;
    n.kind = kind.empty() ? kindFromType(pn.type(), has_schema, t_.str(n.op_schema).empty())
                          : chakra::parseNodeKind(kind, n.kind);
    decodeIo(&n, pend);
    comm(pn, &n, *pend, index);
    t_.nodes.push_back(std::move(n));
  }

 private:
  // Consumes the attrs that map onto Node fields or our own etb_* attrs.
  bool field(const pb::AttributeProto& a, Node* n, Pending* pend, std::string* kind,
             bool* has_schema) {
    const std::string& name = a.name();
    const auto i = protoInt(a);
    const auto s = protoString(a);
    if (i && name == "rf_id") { n->rf_id = static_cast<uint64_t>(*i); return true; }
    if (i && name == "fw_parent") { n->fw_parent = static_cast<uint64_t>(*i); return true; }
    if (i && name == "seq_id") { n->seq_id = *i; return true; }
    if (i && name == "scope") { n->scope = static_cast<uint32_t>(*i); return true; }
    if (i && name == "tid") { n->tid = static_cast<uint64_t>(*i); return true; }
    if (i && name == "fw_tid") { n->fw_tid = static_cast<uint64_t>(*i); return true; }
    if (s && name == "op_schema") {
      n->op_schema = t_.strings.intern(*s);
      *has_schema = true;
      return true;
    }
    if (name.compare(0, 4, "etb_") != 0) return false;
    if (name.rfind(chakra::kEtbOrigPrefix, 0) == 0) {
      Attr orig = chakra::attrFromProto(t_, a);
      orig.name = t_.strings.intern(name.substr(std::string_view(chakra::kEtbOrigPrefix).size()));
      n->attrs.push_back(std::move(orig));
      return true;
    }
    if (i && name == chakra::kEtbOrigType) n->chakra_type = static_cast<uint8_t>(*i);
    const bool dbl = a.value_case() == pb::AttributeProto::kDoubleVal;
    if (dbl && name == chakra::kEtbDur) n->dur_us = a.double_val();
    if (dbl && name == chakra::kEtbStart) n->start_us = a.double_val();
    if (dbl && name == chakra::kEtbGpuDur) n->gpu_dur_us = a.double_val();
    if (s && name == chakra::kEtbKind) *kind = std::string(*s);
    if (s && name == chakra::kEtbComm) pend->comm_json = std::string(*s);
    if (i && name == chakra::kEtbParent) {
      n->parent = static_cast<NodeId>(*i);
      pend->deps.has_etb_parent = true;
    }
    if (name == chakra::kEtbDataDeps && a.has_uint64_list()) {
      n->data_deps.assign(a.uint64_list().values().begin(), a.uint64_list().values().end());
    }
    for (int k = 0; k < 2; ++k) {
      if (s && name == chakra::kEtbStrides[k]) pend->io[k].strides = std::string(*s);
      if (s && name == chakra::kEtbTree[k]) pend->io[k].tree = std::string(*s);
    }
    return true;
  }

  void decodeIo(Node* n, Pending* pend) {
    for (int k = 0; k < 2; ++k) {
      std::vector<Value>& out = k == 0 ? n->inputs : n->outputs;
      if (chakra::decodeIo(t_, pend->io[k], &out)) continue;
      // Not a Python literal we understand: keep the text, lose nothing.
      const chakra::IoText& io = pend->io[k];
      const std::string_view parts[3] = {io.values, io.shapes, io.types};
      for (int p = 0; p < 3; ++p) {
        if (parts[p].empty()) continue;
        Attr a;
        a.name = t_.strings.intern(chakra::kRawIo[k][p]);
        a.type = t_.strings.intern("string");
        a.value = makeString(t_, parts[p]);
        n->attrs.push_back(a);
      }
    }
  }

  void comm(const pb::Node& pn, Node* n, const Pending& pend, size_t index) {
    CommInfo c;
    if (pend.comm_json) {
      if (!chakra::commFromJson(t_, *pend.comm_json, &c)) {
        SourceLoc loc{file_, 0, n->id, std::string(t_.str(n->name))};
        ETB_INPUT_ERROR(loc, "message ", index, ": attr etb_comm is not valid");
      }
    } else if (!commFromAttrs(pn, &c)) {
      return;
    }
    n->comm = static_cast<int32_t>(t_.comms.size());
    t_.comms.push_back(c);
  }

  bool commFromAttrs(const pb::Node& pn, CommInfo* c) {
    const int type = pn.type();
    const bool p2p = type == pb::COMM_SEND_NODE || type == pb::COMM_RECV_NODE;
    if (type != pb::COMM_COLL_NODE && !p2p) return false;
    int64_t src = -1, dst = -1;
    for (const pb::AttributeProto& a : pn.attr()) {
      const auto i = protoInt(a);
      const std::string& name = a.name();
      if (i && name == "comm_type") c->type = chakra::commTypeFromChakra(*i);
      if (i && name == "comm_size") c->bytes = static_cast<uint64_t>(*i);
      if (i && name == "comm_src") src = *i;
      if (i && name == "comm_dst") dst = *i;
      if (name == "pg_name") {
        const auto s = protoString(a);
        c->pg_name = t_.strings.intern(s ? std::string(*s) : i ? std::to_string(*i) : "");
      }
    }
    if (p2p) {
      c->is_p2p = true;
      // Chakra runs a node once its deps are met: one ring step's send and
      // receive are ready together, so blocking them in node order deadlocks
      // once a message passes MPI's eager limit. They post non-blocking and
      // complete before the first node that depends on them.
      c->is_async = true;
      c->type = type == pb::COMM_SEND_NODE ? CommType::kSend : CommType::kRecv;
      c->peer = type == pb::COMM_SEND_NODE ? dst : src;
    }
    c->raw_name = t_.strings.intern(commTypeName(c->type));
    return true;
  }

  Trace& t_;
  const std::string& file_;
};

bool isKernelNode(const pb::Node& pn) {
  for (const pb::AttributeProto& a : pn.attr()) {
    if (a.name() == chakra::kEtbKernelNode) return true;
  }
  return false;
}

}  // namespace

Trace readChakraBytes(const std::string& bytes, const std::string& name,
                      const ReadOptions& options) {
  Trace t;
  t.path = name;
  t.format = SourceFormat::kChakraProtobuf;
  t.rank = chakra::rankFromPath(name);
  google::protobuf::LogSilencer quiet;  // bad UTF-8 in garbage input is our error, not a log line
  Framer framer(bytes, name);
  if (framer.done()) framer.fail("empty file: no GlobalMetadata");
  pb::GlobalMetadata md;
  const std::string_view first = framer.next();
  if (!md.ParseFromArray(first.data(), static_cast<int>(first.size())) ||
      !md.GetReflection()->GetUnknownFields(md).empty()) {
    framer.fail("not a Chakra GlobalMetadata message");
  }
  bool sched_deps = false;
  readMetadata(t, md, &sched_deps);
  NodeReader reader(t, name);
  std::vector<Pending> pending;
  pb::Node pn;
  while (!framer.done()) {
    const std::string_view msg = framer.next();
    if (msg.empty()) framer.fail("empty message (a Chakra reader stops here)");
    if (!pn.ParseFromArray(msg.data(), static_cast<int>(msg.size()))) {
      framer.fail("not a valid Chakra Node message");
    }
    if (isKernelNode(pn)) continue;  // Trace::kernels come back from etb_trace
    pending.emplace_back();
    reader.read(pn, framer.index() - 1, sched_deps, &pending.back());
    if (options.progress) options.progress(framer.pos(), bytes.size());
  }
  std::vector<chakra::NodeDeps> deps;
  deps.reserve(pending.size());
  for (Pending& p : pending) deps.push_back(std::move(p.deps));
  chakra::resolveDeps(t, deps, name, options.strict);
  return t;
}

Trace readChakra(const std::string& path, const ReadOptions& options) {
  return readChakraBytes(readFileMaybeGzip(path), path, options);
}

}  // namespace etb::trace
