// SPDX-License-Identifier: MIT
#include "composer/node_copy.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/base/error.h"

namespace etb::compose {
using trace::Node;
using trace::Trace;
using trace::Value;

NodeCopier::NodeCopier(Trace& dst, const Trace& src) : dst_(dst), src_(src), same_(&dst == &src) {}

trace::StrId NodeCopier::str(trace::StrId s) {
  return same_ ? s : dst_.strings.intern(src_.str(s));
}

Value NodeCopier::value(const Value& v, const TensorShift& shift) {
  Value out = v;
  out.type = str(v.type);
  if (v.kind == trace::ValueKind::kString || v.kind == trace::ValueKind::kDevice ||
      v.kind == trace::ValueKind::kOpaque) {
    out.s = str(v.s);
  }
  if (v.kind == trace::ValueKind::kTensor) {
    trace::TensorRef ref = src_.tensors[v.tensor];  // a copy: push_back may move dst's
    bool replaced = false;
    if (shift.replace != nullptr) {
      auto it = shift.replace->find({ref.tensor_id, ref.storage_id});
      if (it != shift.replace->end()) {
        ref = it->second;
        replaced = true;
      }
    }
    if (!replaced) {
      if (ref.tensor_id != 0) ref.tensor_id += shift.tensor;
      if (ref.storage_id != 0) ref.storage_id += shift.storage;
      if (!same_) {
        ref.device = dst_.strings.intern(src_.str(ref.device));
        ref.shape = dst_.lists.intern(src_.list(ref.shape));
        ref.strides = dst_.lists.intern(src_.list(ref.strides));
      }
    }
    out.tensor = static_cast<uint32_t>(dst_.tensors.size());
    dst_.tensors.push_back(ref);
  }
  for (size_t i = 0; i < v.items.size(); ++i) out.items[i] = value(v.items[i], shift);
  return out;
}

namespace {
int32_t mergeGroup(Trace& dst, const Trace& src, const trace::ProcessGroup& g) {
  for (size_t i = 0; i < dst.process_groups.size(); ++i) {
    if (dst.process_groups[i].name != g.name) continue;
    if (dst.process_groups[i].ranks != g.ranks) {
      ETB_INPUT_ERROR(SourceLoc{src.path}, "process group \"", g.name,
                      "\" has other ranks than in ", dst.path);
    }
    return static_cast<int32_t>(i);
  }
  dst.process_groups.push_back(g);
  return static_cast<int32_t>(dst.process_groups.size() - 1);
}
}  // namespace

int32_t NodeCopier::group(int32_t index) {
  if (same_ || index < 0) return index;
  return mergeGroup(dst_, src_, src_.process_groups[static_cast<size_t>(index)]);
}

void mergeProcessGroups(Trace& dst, const Trace& src) {
  for (const trace::ProcessGroup& g : src.process_groups) mergeGroup(dst, src, g);
}

int32_t NodeCopier::comm(int32_t index) {
  if (index < 0) return index;
  trace::CommInfo c = src_.comms[static_cast<size_t>(index)];
  c.raw_name = str(c.raw_name);
  c.pg_name = str(c.pg_name);
  c.pg = group(c.pg);
  dst_.comms.push_back(std::move(c));
  return static_cast<int32_t>(dst_.comms.size() - 1);
}

Node NodeCopier::copy(const Node& n, const TensorShift& shift) {
  Node out;
  out.id = n.id;
  out.name = str(n.name);
  out.kind = n.kind;
  out.parent = n.parent;
  out.data_deps = n.data_deps;
  out.rf_id = n.rf_id;
  out.fw_parent = n.fw_parent;
  out.seq_id = n.seq_id;
  out.scope = n.scope;
  out.tid = n.tid;
  out.fw_tid = n.fw_tid;
  out.op_schema = str(n.op_schema);
  for (const Value& v : n.inputs) out.inputs.push_back(value(v, shift));
  for (const Value& v : n.outputs) out.outputs.push_back(value(v, shift));
  for (const trace::Attr& a : n.attrs) {
    out.attrs.push_back({str(a.name), str(a.type), value(a.value, shift)});
  }
  out.comm = comm(n.comm);
  out.chakra_type = n.chakra_type;
  out.start_us = n.start_us;
  out.dur_us = n.dur_us;
  out.gpu_dur_us = n.gpu_dur_us;
  return out;
}

Trace shellOf(const Trace& t) {
  Trace out;
  out.path = t.path;
  out.format = t.format;
  out.schema = t.schema;
  out.pid = t.pid;
  out.time = t.time;
  out.start_ts = t.start_ts;
  out.finish_ts = t.finish_ts;
  out.metadata_attrs = t.metadata_attrs;
  out.rank = t.rank;
  out.world_size = t.world_size;
  out.strings = t.strings;
  out.lists = t.lists;
  out.tensors = t.tensors;
  out.comms = t.comms;
  out.process_groups = t.process_groups;
  out.iterations = t.iterations;
  out.repairs = t.repairs;
  return out;
}

Trace shellOf(Trace&& t) {
  Trace out;
  out.path = std::move(t.path);
  out.format = t.format;
  out.schema = std::move(t.schema);
  out.pid = t.pid;
  out.time = std::move(t.time);
  out.start_ts = t.start_ts;
  out.finish_ts = t.finish_ts;
  out.metadata_attrs = std::move(t.metadata_attrs);
  out.rank = t.rank;
  out.world_size = t.world_size;
  out.strings = std::move(t.strings);
  out.lists = std::move(t.lists);
  out.tensors = std::move(t.tensors);
  out.comms = std::move(t.comms);
  out.process_groups = std::move(t.process_groups);
  out.iterations = std::move(t.iterations);
  out.repairs = std::move(t.repairs);
  return out;
}

std::pair<uint64_t, uint64_t> maxTensorIds(const Trace& t) {
  uint64_t tid = 0, sid = 0;
  for (const trace::TensorRef& r : t.tensors) {
    tid = std::max(tid, r.tensor_id);
    sid = std::max(sid, r.storage_id);
  }
  return {tid, sid};
}

void renumber(Trace& t) {
  std::unordered_map<trace::NodeId, trace::NodeId> ids;
  ids.reserve(t.nodes.size() * 2);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const bool fresh = ids.emplace(t.nodes[i].id, i + 1).second;
    ETB_CHECK(fresh, "duplicate node id ", t.nodes[i].id, " before renumbering");
  }
  auto map = [&](trace::NodeId id) {
    auto it = ids.find(id);
    return it == ids.end() ? trace::NodeId{0} : it->second;
  };
  for (Node& n : t.nodes) {
    n.id = map(n.id);
    n.parent = n.parent == 0 ? 0 : map(n.parent);
    for (trace::NodeId& d : n.data_deps) d = map(d);
    n.data_deps.erase(std::remove(n.data_deps.begin(), n.data_deps.end(), 0), n.data_deps.end());
  }
  for (trace::KernelEvent& k : t.kernels) k.node = map(k.node);
  t.finalize();
}

void writeProcessGroupNode(Trace& t) {
  if (t.process_groups.empty()) return;
  nlohmann::json groups = nlohmann::json::array();
  for (const trace::ProcessGroup& g : t.process_groups) {
    groups.push_back({{"pg_name", g.name}, {"pg_desc", g.desc}, {"backend_config", g.backend},
                      {"ranks", g.ranks}, {"group_size", g.size},
                      {"group_count", t.process_groups.size()}});
  }
  Value config = trace::makeString(t, groups.dump());
  for (Node& n : t.nodes) {
    if (n.kind == trace::NodeKind::kMetadata && t.name(n) == "## process_group:init ##") {
      n.inputs.assign(1, config);
      return;
    }
  }
  ETB_CHECK(!t.nodes.empty(), "a trace with process groups has nodes");
  Node n;
  trace::NodeId max_id = 0;
  size_t at = 0;  // after the roots, so that it precedes every collective
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    max_id = std::max(max_id, t.nodes[i].id);
    if (t.nodes[i].kind == trace::NodeKind::kRoot) at = i + 1;
  }
  n.id = max_id + 1;
  n.name = t.strings.intern("## process_group:init ##");
  n.kind = trace::NodeKind::kMetadata;
  // Under the thread node when there is one, as the recorder emits it.
  for (const Node& r : t.nodes) {
    if (r.kind == trace::NodeKind::kRoot) n.parent = r.id;
  }
  n.scope = 7;
  n.inputs.push_back(config);
  t.nodes.insert(t.nodes.begin() + static_cast<std::ptrdiff_t>(at), std::move(n));
}

}  // namespace etb::compose
