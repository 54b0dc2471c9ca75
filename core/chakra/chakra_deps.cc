// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_deps.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/chakra/chakra_extras.h"
#include "core/chakra/chakra_graph.h"
#include "core/chakra/chakra_names.h"

namespace etb::trace::chakra {
namespace {
void sortById(Trace& t, std::vector<NodeDeps>& pending, const std::string& file) {
  std::vector<uint32_t> order(t.nodes.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return t.nodes[a].id < t.nodes[b].id;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const Node& n = t.nodes[order[k]];
    if (n.id == t.nodes[order[k - 1]].id) {
      SourceLoc loc{file, 0, n.id, std::string(t.str(n.name))};
      ETB_INPUT_ERROR(loc, "duplicate node id (messages ", order[k - 1] + 1, " and ",
                      order[k] + 1, ")");
    }
  }
  std::vector<Node> nodes;
  std::vector<NodeDeps> pend;
  nodes.reserve(order.size());
  pend.reserve(order.size());
  for (uint32_t i : order) {
    nodes.push_back(std::move(t.nodes[i]));
    pend.push_back(std::move(pending[i]));
  }
  t.nodes = std::move(nodes);
  pending = std::move(pend);
}

// Drops dependencies on missing nodes and on the node itself (real files have
// both), recording each as a repair; strict mode makes them errors.
class DepCleaner {
 public:
  DepCleaner(Trace& t, const std::string& file, bool strict)
      : t_(t), file_(file), strict_(strict) {}

  std::vector<NodeId> keep(const Node& n, const std::vector<NodeId>& deps, const char* what) {
    std::vector<NodeId> out;
    size_t self = 0, missing = 0;
    for (NodeId d : deps) {
      if (d == n.id) {
        ++self;
      } else if (t_.indexOf(d) == t_.nodes.size()) {
        ++missing;
      } else {
        out.push_back(d);
      }
    }
    if (self + missing > 0) report(n, what, self, missing);
    return out;
  }

 private:
  void report(const Node& n, const char* what, size_t self, size_t missing) {
    std::string msg = std::string("dropped ") + what + ":";
    if (self > 0) msg += " " + std::to_string(self) + " on itself";
    if (missing > 0) msg += " " + std::to_string(missing) + " on missing nodes";
    if (strict_) {
      SourceLoc loc{file_, 0, n.id, std::string(t_.str(n.name))};
      ETB_INPUT_ERROR(loc, msg);
    }
    t_.repairs.push_back({n.id, msg});
  }

  Trace& t_;
  const std::string& file_;
  bool strict_;
};

void loadProcessGroups(Trace& t) {
  if (!t.process_groups.empty()) return;
  for (const Node& n : t.nodes) {
    if (n.kind != NodeKind::kMetadata && t.name(n).find("process_group:init") == std::string_view::npos) {
      continue;
    }
    if (n.inputs.empty() || n.inputs[0].kind != ValueKind::kString) continue;
    if (parsePgConfig(std::string(t.str(n.inputs[0].s)), &t.process_groups)) return;
    t.repairs.push_back({n.id, "process group config did not parse; ignored"});
  }
}

// Old converters wrote ctrl_deps that are not a call tree (Chakra's own
// chakra.0.et has 764 nodes on ctrl cycles). Simulators schedule by
// data_deps, so a ctrl edge inside a cycle is dropped as a repair; a cycle
// of data_deps is an error.
void breakCtrlCycles(Trace& t, const std::vector<NodeId>& ids,
                     const std::vector<std::vector<NodeId>>& data,
                     std::vector<std::vector<NodeId>>& ctrl, bool strict, const std::string& file) {
  std::vector<std::vector<NodeId>> all = data;
  for (size_t i = 0; i < all.size(); ++i) all[i].insert(all[i].end(), ctrl[i].begin(), ctrl[i].end());
  if (!findCycle(ids, all)) return;
  std::vector<uint32_t> sizes;
  const std::vector<uint32_t> comp = components(ids, all, &sizes);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    Node& n = t.nodes[i];
    if (sizes[comp[i]] < 2) continue;
    auto same = [&](NodeId d) { return comp[t.indexOf(d)] == comp[i]; };
    const size_t before = ctrl[i].size();
    ctrl[i].erase(std::remove_if(ctrl[i].begin(), ctrl[i].end(), same), ctrl[i].end());
    if (ctrl[i].size() == before) continue;
    if (strict) {
      SourceLoc loc{file, 0, n.id, std::string(t.str(n.name))};
      ETB_INPUT_ERROR(loc, "ctrl dependency on a cycle");
    }
    if (n.parent != 0 && n.parent != n.id && same(n.parent)) n.parent = 0;
    t.repairs.push_back({n.id, "dropped ctrl dependencies that formed a cycle"});
  }
}

// Index of the first ctrl dependency that is not the call-tree parent.
size_t firstExtraCtrl(const NodeDeps& p) { return !p.ctrl.empty() && p.ctrl[0] != 0 ? 1 : 0; }

Attr uintListAttr(Trace& t, const char* name, const std::vector<NodeId>& ids) {
  Attr a;
  a.name = t.strings.intern(name);
  a.type = t.strings.intern("uint64_list");
  a.value.kind = ValueKind::kList;
  a.value.type = a.type;
  for (NodeId d : ids) a.value.items.push_back(makeInt(t, static_cast<int64_t>(d), "uint64"));
  return a;
}

}  // namespace

void resolveDeps(Trace& t, std::vector<NodeDeps>& pending, const std::string& file, bool strict) {
  sortById(t, pending, file);
  DepCleaner clean(t, file, strict);
  std::vector<NodeId> ids;
  std::vector<std::vector<NodeId>> data(t.nodes.size()), ctrl(t.nodes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    Node& n = t.nodes[i];
    ids.push_back(n.id);
    const NodeDeps& p = pending[i];
    if (!p.has_etb_parent && n.parent != 0) {
      const std::vector<NodeId> kept = clean.keep(n, {n.parent}, "ctrl dependency");
      n.parent = kept.empty() ? 0 : kept[0];
    }
    if (n.parent != 0 && n.parent != n.id && t.find(n.parent) != nullptr) ctrl[i].push_back(n.parent);
    // The model's parent uses 0 for "none", so a ctrl dependency on node 0
    // (ASTRA-sim's files number from 0) cannot be the parent: all of that
    // node's ctrl deps are kept as extras instead.
    const size_t first_extra = firstExtraCtrl(p);
    if (p.ctrl.size() > first_extra) {
      const std::vector<NodeId> extra = clean.keep(
          n, std::vector<NodeId>(p.ctrl.begin() + first_extra, p.ctrl.end()),
          "extra ctrl dependencies");
      ctrl[i].insert(ctrl[i].end(), extra.begin(), extra.end());
    }
    n.data_deps = clean.keep(n, n.data_deps, "data dependencies");
    data[i] = n.data_deps;
  }
  if (const auto bad = findCycle(ids, data)) {
    const Node* n = t.find(*bad);
    SourceLoc loc{file, 0, *bad, n != nullptr ? std::string(t.str(n->name)) : ""};
    ETB_INPUT_ERROR(loc, "data dependency cycle through this node");
  }
  breakCtrlCycles(t, ids, data, ctrl, strict, file);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (pending[i].ctrl.size() <= firstExtraCtrl(pending[i])) continue;
    // Extras are what is left after the parent.
    std::vector<NodeId> extra = ctrl[i];
    const auto p = std::find(extra.begin(), extra.end(), t.nodes[i].parent);
    if (p != extra.end() && t.nodes[i].parent != 0) extra.erase(p);
    t.nodes[i].attrs.push_back(uintListAttr(t, kCtrlDepsExtra, extra));
  }
  loadProcessGroups(t);
  const std::vector<Iteration> kept = t.iterations;
  t.finalize();
  if (t.iterations.empty()) t.iterations = kept;
}

}  // namespace etb::trace::chakra
