// SPDX-License-Identifier: MIT
#include "composer/splice.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "composer/node_copy.h"
#include "composer/selector.h"
#include "core/base/error.h"
#include "replayer/op_selection.h"

namespace etb::compose {
namespace {
using trace::Node;
using trace::NodeId;
using trace::NodeKind;
using trace::Trace;
using trace::Value;

using ChainMap = std::unordered_map<TensorKey, trace::TensorRef, TensorKeyHash>;

void forEachTensor(const Value& v, const std::function<void(uint32_t)>& f) {
  if (v.kind == trace::ValueKind::kTensor) f(v.tensor);
  for (const Value& x : v.items) forEachTensor(x, f);
}

bool inBody(const Node& n, const trace::Iteration& it) {
  return n.id > it.begin && n.id < it.end && n.kind != NodeKind::kRoot &&
         n.kind != NodeKind::kMetadata && n.kind != NodeKind::kMarker;
}

// The body's open ends: for each input that the body reads before producing
// it and that matches (shape, dtype) a final output of the body, which
// output feeds it in the next copy. Keys are source identities; values the
// source refs of the outputs.
std::unordered_map<TensorKey, uint32_t, TensorKeyHash> chainPairs(const Trace& t,
                                                                   const trace::Iteration& it) {
  std::vector<uint32_t> externals, produced_order;
  std::unordered_set<TensorKey, TensorKeyHash> produced, seen_external, read_after;
  std::unordered_map<TensorKey, uint32_t, TensorKeyHash> last_ref;
  for (const replay::SelectedNode& s : replay::selectNodes(t, it)) {
    const Node& n = t.nodes[s.index];
    for (const Value& v : n.inputs) {
      forEachTensor(v, [&](uint32_t ti) {
        const trace::TensorRef& r = t.tensors[ti];
        const TensorKey key{r.tensor_id, r.storage_id};
        if (r.tensor_id == 0) return;
        if (produced.count(key)) read_after.insert(key);
        else if (seen_external.insert(key).second) externals.push_back(ti);
      });
    }
    for (const Value& v : n.outputs) {
      forEachTensor(v, [&](uint32_t ti) {
        const trace::TensorRef& r = t.tensors[ti];
        const TensorKey key{r.tensor_id, r.storage_id};
        if (r.tensor_id == 0) return;
        produced.insert(key);
        read_after.erase(key);
        last_ref[key] = ti;
        produced_order.push_back(ti);
      });
    }
  }
  // Externals by (shape, dtype, layout), in first-use order, each paired
  // once. A tensor without storage (torch 1.13's sparse gradients) only
  // stands for another such: fed a dense one, the next copy's sparse ops
  // (coalesce, _values) cannot run.
  using ShapeKey = std::tuple<trace::ListId, trace::DType, bool>;
  std::map<ShapeKey, std::vector<uint32_t>> by_shape;
  for (size_t k = externals.size(); k-- > 0;) {
    const trace::TensorRef& in = t.tensors[externals[k]];
    by_shape[{in.shape, in.dtype, in.storage_id == 0}].push_back(externals[k]);  // back() = first
  }
  std::unordered_map<TensorKey, uint32_t, TensorKeyHash> pairs;
  std::unordered_set<TensorKey, TensorKeyHash> used;
  // Latest final output first: a layer's result is what it produces last.
  for (size_t k = produced_order.size(); k-- > 0;) {
    const trace::TensorRef& out = t.tensors[produced_order[k]];
    const TensorKey okey{out.tensor_id, out.storage_id};
    if (read_after.count(okey) || used.count(okey) || last_ref[okey] != produced_order[k]) continue;
    auto bucket = by_shape.find({out.shape, out.dtype, out.storage_id == 0});
    if (bucket == by_shape.end() || bucket->second.empty()) continue;
    const trace::TensorRef& in = t.tensors[bucket->second.back()];
    bucket->second.pop_back();
    pairs[{in.tensor_id, in.storage_id}] = produced_order[k];
    used.insert(okey);
  }
  return pairs;
}

// An op that outputs a chained identity it does not read makes a new tensor
// there: torch 1.13's observer hands a freed tensor's id to the next one at
// its address. From that op on, the identity is this copy's own tensor, not
// the previous copy's output (an in-place op reads what it writes, and keeps
// the chain).
void releaseReusedKeys(const Trace& t, const Node& n, ChainMap* chain) {
  if (chain->empty()) return;
  std::vector<TensorKey> read;
  for (const Value& v : n.inputs) {
    forEachTensor(v, [&](uint32_t ti) { read.emplace_back(t.tensors[ti].tensor_id, t.tensors[ti].storage_id); });
  }
  for (const Value& v : n.outputs) {
    forEachTensor(v, [&](uint32_t ti) {
      const TensorKey key{t.tensors[ti].tensor_id, t.tensors[ti].storage_id};
      if (std::find(read.begin(), read.end(), key) == read.end()) chain->erase(key);
    });
  }
}

double bodySpanUs(const Trace& t, const trace::Iteration& it) {
  if (it.dur_us > 0) return it.dur_us;
  double lo = 1e300, hi = -1e300;
  for (const Node& n : t.nodes) {
    if (!inBody(n, it) || n.start_us < 0) continue;
    lo = std::min(lo, n.start_us);
    hi = std::max(hi, n.start_us + std::max(0.0, n.dur_us));
  }
  return hi > lo ? hi - lo : 0;
}

// Works on a trace it owns: the original nodes are moved into the result
// and the copies are made from them there (no second copy of a large trace).
class Repeater {
 public:
  Repeater(Trace t, int k) : src_(std::move(t)), k_(k) {
    const auto [tid, sid] = maxTensorIds(src_);
    tensor_span_ = tid + 1;
    storage_span_ = sid + 1;
    id_span_ = src_.nodes.empty() ? 1 : src_.nodes.back().id + 1;
    for (const Node& n : src_.nodes) rf_span_ = std::max(rf_span_, n.rf_id + 1);
  }

  Trace run(RepeatStats* stats) {
    std::vector<trace::Iteration> its = src_.iterations;
    if (its.empty()) its.push_back(replay::chooseIteration(src_, 0));
    // What the copies need of the intact nodes, before they move.
    std::vector<Plan> plans;
    for (const trace::Iteration& it : its) plans.push_back(plan(it));
    Trace out = shellOf(std::move(src_));  // src_ keeps its nodes' ids and kinds
    // Copies read their originals inside out.nodes: no reallocation allowed.
    out.nodes.reserve(src_.nodes.size() * static_cast<size_t>(k_));
    pos_.resize(src_.nodes.size());
    NodeCopier copier(out, out);
    size_t next = 0;
    for (size_t i = 0; i < src_.nodes.size(); ++i) {
      while (next < its.size() && src_.nodes[i].id >= its[next].end) emitCopies(out, copier, plans[next++]);
      pos_[i] = out.nodes.size();
      out.nodes.push_back(std::move(src_.nodes[i]));  // id and kind stay readable in src_
      src_.nodes[i].id = out.nodes.back().id;
      src_.nodes[i].kind = out.nodes.back().kind;
    }
    while (next < its.size()) emitCopies(out, copier, plans[next++]);
    renumber(out);
    if (stats != nullptr) *stats = stats_;
    return out;
  }

 private:
  struct Plan {
    trace::Iteration it;
    std::unordered_map<TensorKey, uint32_t, TensorKeyHash> pairs;
    double span = 0;
    std::vector<uint32_t> body;  // indices into src_.nodes
  };

  Plan plan(const trace::Iteration& it) const {
    Plan p{it, chainPairs(src_, it), bodySpanUs(src_, it), {}};
    const size_t first = src_.indexOf(it.begin);
    for (size_t i = first == src_.nodes.size() ? 0 : first;
         i < src_.nodes.size() && src_.nodes[i].id < it.end; ++i) {
      if (inBody(src_.nodes[i], it)) p.body.push_back(static_cast<uint32_t>(i));
    }
    return p;
  }

  void emitCopies(Trace& out, NodeCopier& copier, const Plan& p) {
    for (int c = 1; c < k_; ++c) {
      const uint64_t uc = static_cast<uint64_t>(c);
      // The previous copy's outputs, in this copy's terms.
      ChainMap chain;
      for (const auto& [key, ti] : p.pairs) {
        trace::TensorRef r = out.tensors[ti];
        r.tensor_id += (uc - 1) * tensor_span_;
        if (r.storage_id != 0) r.storage_id += (uc - 1) * storage_span_;  // as NodeCopier
        chain[key] = r;
      }
      stats_.chained += chain.size();
      TensorShift shift{uc * tensor_span_, uc * storage_span_, &chain};
      auto mapId = [&](NodeId id) {
        const Node* q = src_.find(id);
        return q != nullptr && inBody(*q, p.it) ? id + uc * id_span_ : id;
      };
      for (uint32_t i : p.body) {
        const Node& n = out.nodes[pos_[i]];
        releaseReusedKeys(out, n, &chain);
        Node copy = copier.copy(n, shift);
        copy.id = n.id + uc * id_span_;
        copy.parent = mapId(n.parent);
        for (NodeId& d : copy.data_deps) d = mapId(d);
        if (copy.rf_id != 0) copy.rf_id += uc * rf_span_;
        if (copy.start_us >= 0) copy.start_us += static_cast<double>(c) * p.span;
        out.nodes.push_back(std::move(copy));
      }
      ++stats_.copies;
    }
  }

  Trace src_;
  int k_;
  uint64_t tensor_span_ = 1, storage_span_ = 1, id_span_ = 1, rf_span_ = 1;
  std::vector<size_t> pos_;  // where each original node sits in the result
  RepeatStats stats_;
};

// Index of the first root with this name in `t`, or npos.
size_t rootNamed(const Trace& t, std::string_view name) {
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (t.nodes[i].kind == NodeKind::kRoot && t.name(t.nodes[i]) == name) return i;
  }
  return t.nodes.size();
}
}  // namespace

Trace repeatTrace(Trace t, int k, RepeatStats* stats) {
  if (k < 1) ETB_INPUT_ERROR(SourceLoc{"--repeat"}, "repeat count must be >= 1, got ", k);
  return Repeater(std::move(t), k).run(stats);
}

Trace concatTraces(const Trace& a, const Trace& b) {
  Trace out = a;
  const auto [tid, sid] = maxTensorIds(out);
  const NodeId base = out.nodes.empty() ? 1 : out.nodes.back().id + 1;
  NodeCopier copier(out, b);
  const TensorShift shift{tid + 1, sid + 1, nullptr};
  std::unordered_map<NodeId, NodeId> merged;  // b root id -> a root id
  bool a_has_pg = false;
  for (const Node& n : a.nodes) a_has_pg |= n.kind == NodeKind::kMetadata;
  for (const Node& n : b.nodes) {
    if (n.kind == NodeKind::kRoot) {
      const size_t r = rootNamed(out, b.name(n));
      if (r != out.nodes.size()) {
        merged[n.id] = out.nodes[r].id;
        continue;
      }
    }
    if (n.kind == NodeKind::kMetadata && a_has_pg) continue;  // groups merge below
    Node copy = copier.copy(n, shift);
    copy.id = n.id + base;
    auto mapId = [&](NodeId id) {
      if (id == 0) return id;
      auto m = merged.find(id);
      return m != merged.end() ? m->second : id + base;
    };
    copy.parent = n.parent == n.id ? copy.id : mapId(n.parent);
    for (NodeId& d : copy.data_deps) d = mapId(d);
    out.nodes.push_back(std::move(copy));
  }
  mergeProcessGroups(out, b);
  out.rank = a.rank >= 0 ? a.rank : b.rank;
  out.world_size = std::max(a.world_size, b.world_size);
  writeProcessGroupNode(out);
  renumber(out);
  return out;
}

namespace {
// The top-most communication calls of `comm`'s first iteration, each with
// its subtree (node indices in id order).
std::vector<std::vector<size_t>> commUnits(const Trace& comm) {
  std::vector<std::vector<size_t>> units;
  const auto kids = comm.children();
  for (const replay::SelectedNode& s : replay::selectNodes(comm, replay::chooseIteration(comm, 0))) {
    if (!s.is_comm && !isCommWrapper(comm.name(comm.nodes[s.index]))) continue;
    std::vector<size_t> sub{s.index};
    for (size_t q = 0; q < sub.size(); ++q) {
      for (uint32_t c : kids[sub[q]]) sub.push_back(c);
    }
    std::sort(sub.begin(), sub.end());
    units.push_back(std::move(sub));
  }
  return units;
}
}  // namespace

Trace interleaveTraces(const Trace& compute, const Trace& comm) {
  const std::vector<std::vector<size_t>> units = commUnits(comm);
  if (units.empty()) {
    ETB_INPUT_ERROR(SourceLoc{comm.path}, "interleave: the trace has no communication to take");
  }
  Trace base = selectNodes(compute, {parseSelector("compute")});
  const trace::Iteration it = replay::chooseIteration(base, 0);
  const auto steps = replay::selectNodes(base, it);
  NodeId anchor = it.marker;
  if (anchor == 0) {
    for (const Node& n : base.nodes) anchor = n.kind == NodeKind::kRoot ? n.id : anchor;
  }
  // Unit j goes before compute step at[j] (even spacing).
  std::vector<std::vector<size_t>> before(steps.size() + 1);
  for (size_t j = 0; j < units.size(); ++j) {
    before[(j + 1) * steps.size() / (units.size() + 1)].push_back(j);
  }
  Trace out = shellOf(base);
  NodeCopier copier(out, comm);
  const auto [tid, sid] = maxTensorIds(base);
  const NodeId id_base = base.nodes.empty() ? 1 : base.nodes.back().id + 1;
  auto emitUnits = [&](size_t slot) {
    for (size_t j : before[slot]) {
      for (size_t idx : units[j]) {
        const Node& n = comm.nodes[idx];
        Node copy = copier.copy(n, {tid + 1, sid + 1, nullptr});
        copy.id = n.id + id_base;
        copy.parent = idx == units[j].front() ? anchor : n.parent + id_base;
        copy.data_deps.clear();
        out.nodes.push_back(std::move(copy));
      }
    }
  };
  size_t step = 0;
  for (size_t i = 0; i < base.nodes.size(); ++i) {
    while (step < steps.size() && steps[step].index == i) emitUnits(step++);
    if (step == steps.size() && base.nodes[i].id >= it.end) emitUnits(step++);
    out.nodes.push_back(base.nodes[i]);
  }
  while (step <= steps.size()) emitUnits(step++);
  mergeProcessGroups(out, comm);
  out.world_size = std::max(out.world_size, comm.world_size);
  if (out.rank < 0) out.rank = comm.rank;
  writeProcessGroupNode(out);
  renumber(out);
  return out;
}

}  // namespace etb::compose
