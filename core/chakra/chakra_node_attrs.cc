// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_node_attrs.h"

#include <algorithm>

#include "core/chakra/chakra_attrs.h"
#include "core/chakra/chakra_names.h"

namespace etb::trace::chakra {
namespace {
namespace pb = ChakraProtoMsg;

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

bool isCommType(int type) { return type >= pb::COMM_SEND_NODE && type <= pb::COMM_COLL_NODE; }

bool isRawIo(const std::string& name) {
  for (const auto& io : kRawIo) {
    for (const char* p : io) {
      if (name == p) return true;
    }
  }
  return false;
}
}  // namespace

void NodeAttrWriter::add(std::vector<Canon>* out, const char* name, Value v, const char* kind) {
  Attr a;
  a.name = scratch_.strings.intern(name);
  a.type = scratch_.strings.intern(kind);
  a.value = std::move(v);
  // What a plain read of this kind gives back (a bool keeps makeBool's type).
  if (a.value.kind != ValueKind::kBool) a.value.type = a.type;
  out->push_back({name, std::move(a)});
}

std::vector<NodeAttrWriter::Canon> NodeAttrWriter::canonical(const Node& n, int type,
                                                             std::vector<std::string>* suppress) {
  std::vector<Canon> out;
  Trace& s = scratch_;
  const bool comm = isCommType(type);
  bool cpu = !comm && n.kind != NodeKind::kKernel;
  const Attr* rec = t_.attr(n, "is_cpu_op");
  if (rec != nullptr && !comm) {
    if (const auto b = toConsumerKind(s, t_, *rec, *consumerAttr("is_cpu_op"))) cpu = b->value.b;
  }
  add(&out, "is_cpu_op", makeBool(s, cpu), "bool");
  if (n.comm >= 0 && comm) commAttrs(t_.comms[static_cast<size_t>(n.comm)], type, &out, suppress);
  const uint64_t bytes = tensorBytes(t_, n.inputs) + tensorBytes(t_, n.outputs);
  if ((n.kind == NodeKind::kOperator && bytes > 0) || type == pb::MEM_LOAD_NODE ||
      type == pb::MEM_STORE_NODE) {
    add(&out, "tensor_size", makeInt(s, static_cast<int64_t>(bytes)), "uint64");
  }
  return out;
}

void NodeAttrWriter::commAttrs(const CommInfo& c, int type, std::vector<Canon>* out,
                               std::vector<std::string>* suppress) {
  Trace& s = scratch_;
  uint64_t bytes = c.bytes;
  if (bytes == 0) bytes = std::max(c.in_elems, c.out_elems) * static_cast<uint64_t>(dtypeSize(c.dtype));
  if (type == pb::COMM_COLL_NODE) {
    const CommPlacement p = placeComm(c);
    add(out, "comm_type", makeInt(s, p.comm_type), "int64");
    if (c.type == CommType::kBarrier) bytes = std::max<uint64_t>(bytes, 1);
  }
  add(out, "comm_size", makeInt(s, static_cast<int64_t>(bytes)), "int64");
  const std::string key = pgKey(t_, c);
  const auto id = options_.pg_ids.find(key);
  if (report_ != nullptr) report_->pg_keys.insert(key);
  if (id != options_.pg_ids.end()) {
    add(out, "pg_name", makeString(s, id->second), "string");
  } else {
    suppress->push_back("pg_name");  // a recorded "0" would name ASTRA-sim's reserved group
    if (report_ != nullptr) ++report_->ungrouped;
  }
  if (type == pb::COMM_COLL_NODE) return;
  // Upstream leaves peers out and ASTRA-sim then talks to itself.
  const int64_t self = std::max<int64_t>(t_.rank, 0);
  const bool send = type == pb::COMM_SEND_NODE;
  add(out, "comm_src", makeInt(s, send ? self : c.peer), "int32");
  add(out, "comm_dst", makeInt(s, send ? c.peer : self), "int32");
  add(out, "comm_tag", makeInt(s, 0), "int32");
}

void NodeAttrWriter::writeRecorded(const Attr& a, const Canon* canon, bool suppressed,
                                   pb::Node* pn, std::string* synth) {
  const std::string name(t_.str(a.name));
  pb::AttributeProto rec;
  attrToProto(t_, a, &rec);
  std::optional<Attr> conv;
  if (canon != nullptr) {
    conv = canon->attr;
  } else if (!suppressed) {
    conv = toConsumerKind(scratch_, t_, a, *consumerAttr(name));
    if (!conv && report_ != nullptr) ++report_->dropped[name];
  }
  pb::AttributeProto want;
  if (conv) attrToProto(scratch_, *conv, &want);
  if (conv && want.SerializeAsString() == rec.SerializeAsString()) {
    *pn->add_attr() = rec;
    return;
  }
  if (conv) {
    *pn->add_attr() = want;
    *synth += name + ",";
  }
  rec.set_name(std::string(kEtbOrigPrefix) + name);
  *pn->add_attr() = rec;
}

void NodeAttrWriter::write(const Node& n, int type, pb::Node* pn, std::string* synth) {
  std::vector<std::string> suppress;
  const std::vector<Canon> canon = canonical(n, type, &suppress);
  std::vector<bool> done(canon.size(), false);
  for (const Attr& a : n.attrs) {
    const std::string name(t_.str(a.name));
    if (name == kCtrlDepsExtra || isRawIo(name)) continue;
    if (consumerAttr(name) == nullptr) {
      attrToProto(t_, a, pn->add_attr());
      continue;
    }
    const auto c = std::find_if(canon.begin(), canon.end(), [&](const Canon& e) { return e.name == name; });
    const bool suppressed = std::find(suppress.begin(), suppress.end(), name) != suppress.end();
    const bool first = c != canon.end() && !done[static_cast<size_t>(c - canon.begin())];
    writeRecorded(a, first ? &*c : nullptr, suppressed || (c != canon.end() && !first), pn, synth);
    if (c != canon.end()) done[static_cast<size_t>(c - canon.begin())] = true;
  }
  for (size_t k = 0; k < canon.size(); ++k) {
    if (done[k]) continue;
    attrToProto(scratch_, canon[k].attr, pn->add_attr());
    *synth += canon[k].name + ",";
  }
}

}  // namespace etb::trace::chakra
