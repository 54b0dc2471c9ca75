// SPDX-License-Identifier: MIT
#include "composer/selector.h"

#include <algorithm>
#include <string_view>

#include "composer/node_copy.h"
#include "core/base/error.h"

namespace etb::compose {
namespace {
using trace::Node;
using trace::NodeKind;

constexpr std::string_view kKnown =
    "op:REGEX, scope:REGEX, phase:forward|backward|optimizer, iter:N, step:N, ids:A-B, "
    "compute, comm";

int64_t parseInt(const std::string& text, const std::string& whole) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    ETB_INPUT_ERROR(SourceLoc{"--select"}, "selector \"", whole, "\": \"", text,
                    "\" is not an integer");
  }
  return v;
}

std::regex compile(const std::string& pattern, const std::string& whole) {
  try {
    return std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    ETB_INPUT_ERROR(SourceLoc{"--select"}, "selector \"", whole, "\": bad regex: ", e.what());
  }
}

bool isExecutable(NodeKind k) {
  return k == NodeKind::kOperator || k == NodeKind::kCollective ||
         k == NodeKind::kPointToPoint || k == NodeKind::kWait;
}

bool isCommKind(NodeKind k) {
  return k == NodeKind::kCollective || k == NodeKind::kPointToPoint || k == NodeKind::kWait;
}

bool isRootNode(const trace::Trace& t, const Node& n) {
  return n.parent == 0 || n.parent == n.id || t.find(n.parent) == nullptr;
}

// Root indices in id order.
std::vector<uint32_t> rootsOf(const trace::Trace& t) {
  std::vector<uint32_t> roots;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (isRootNode(t, t.nodes[i])) roots.push_back(static_cast<uint32_t>(i));
  }
  return roots;
}

Phase explicitPhase(std::string_view name) {
  if (name.find("## forward ##") != std::string_view::npos) return Phase::kForward;
  if (name.find("## backward ##") != std::string_view::npos) return Phase::kBackward;
  if (name.find("## optimizer ##") != std::string_view::npos) return Phase::kOptimizer;
  return Phase::kNone;
}

Phase implicitPhase(std::string_view name) {
  if (name.rfind("autograd::engine::evaluate_function", 0) == 0) return Phase::kBackward;
  if (name.rfind("Optimizer.", 0) == 0) return Phase::kOptimizer;
  return Phase::kNone;
}
}  // namespace

bool isCommWrapper(std::string_view name) {
  return name.rfind("c10d::", 0) == 0 || name == "record_param_comms";
}

Selector parseSelector(const std::string& text) {
  Selector s;
  s.text = text;
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool need_arg = kind != "compute" && kind != "comm";
  if (need_arg && arg.empty()) {
    ETB_INPUT_ERROR(SourceLoc{"--select"}, "unknown or incomplete selector \"", text,
                    "\"; known: ", kKnown);
  }
  if (kind == "op" || kind == "scope") {
    s.kind = kind == "op" ? SelectorKind::kOp : SelectorKind::kScope;
    s.pattern = compile(arg, text);
  } else if (kind == "phase") {
    if (arg != "forward" && arg != "backward" && arg != "optimizer") {
      ETB_INPUT_ERROR(SourceLoc{"--select"}, "selector \"", text,
                      "\": phase must be forward, backward or optimizer");
    }
    s.kind = SelectorKind::kPhase;
    s.phase = arg;
  } else if (kind == "iter" || kind == "step") {
    s.kind = kind == "iter" ? SelectorKind::kIter : SelectorKind::kStep;
    s.lo = parseInt(arg, text);
  } else if (kind == "ids") {
    s.kind = SelectorKind::kIds;
    const size_t dash = arg.find('-');
    s.lo = parseInt(arg.substr(0, dash), text);
    s.hi = dash == std::string::npos ? s.lo : parseInt(arg.substr(dash + 1), text);
    if (s.hi < s.lo) ETB_INPUT_ERROR(SourceLoc{"--select"}, "selector \"", text, "\": empty range");
  } else if ((kind == "compute" || kind == "comm") && colon == std::string::npos) {
    s.kind = kind == "compute" ? SelectorKind::kCompute : SelectorKind::kComm;
  } else {
    ETB_INPUT_ERROR(SourceLoc{"--select"}, "unknown selector \"", text, "\"; known: ", kKnown);
  }
  return s;
}

std::vector<Phase> phasesOf(const trace::Trace& t) {
  std::vector<Phase> out(t.nodes.size(), Phase::kNone);
  bool explicit_labels = false;
  for (const Node& n : t.nodes) explicit_labels |= explicitPhase(t.name(n)) != Phase::kNone;
  const auto children = t.children();
  // DFS; a phase label sets the phase of its subtree.
  std::vector<std::pair<uint32_t, Phase>> stack;
  for (uint32_t r : rootsOf(t)) stack.emplace_back(r, Phase::kNone);
  while (!stack.empty()) {
    auto [i, inherited] = stack.back();
    stack.pop_back();
    const std::string_view name = t.name(t.nodes[i]);
    Phase p = explicit_labels ? explicitPhase(name) : implicitPhase(name);
    if (p == Phase::kNone) p = inherited;
    out[i] = p;
    for (uint32_t c : children[i]) stack.emplace_back(c, p);
  }
  if (explicit_labels) return out;
  // Without labels, the rest of an iteration before its first backward node
  // is forward (the loss included), after it backward (loss.backward()'s
  // seed and DDP hooks that autograd's nodes do not enclose).
  for (const trace::Iteration& it : t.iterations) {
    bool in_backward = false;
    for (size_t i = t.indexOf(it.begin); i < t.nodes.size() && t.nodes[i].id < it.end; ++i) {
      const Node& n = t.nodes[i];
      if (n.kind == NodeKind::kMarker || n.kind == NodeKind::kRoot || n.kind == NodeKind::kMetadata) {
        continue;
      }
      if (out[i] == Phase::kBackward) in_backward = true;
      if (out[i] == Phase::kNone) out[i] = in_backward ? Phase::kBackward : Phase::kForward;
    }
  }
  return out;
}

namespace {
class SelectionBuilder {
 public:
  SelectionBuilder(const trace::Trace& t, const std::vector<Selector>& s) : t_(t), sel_(s) {
    for (const Selector& x : s) need_phases_ |= x.kind == SelectorKind::kPhase;
    if (need_phases_) phases_ = phasesOf(t);
  }

  trace::Trace run() {
    ETB_CHECK(sel_.size() <= 31, "at most 31 selectors");
    const uint32_t all = sel_.empty() ? 0 : static_cast<uint32_t>((uint64_t{1} << sel_.size()) - 1);
    const auto children = t_.children();
    std::vector<uint8_t> selected(t_.nodes.size(), 0);
    std::vector<std::pair<uint32_t, uint32_t>> stack;  // (index, inherited mask)
    for (uint32_t r : rootsOf(t_)) stack.emplace_back(r, 0);
    while (!stack.empty()) {
      auto [i, mask] = stack.back();
      stack.pop_back();
      // Bit 31: below a communication wrapper (its ops are not compute).
      const bool under_comm = (mask & kUnderComm) != 0;
      for (size_t k = 0; k < sel_.size(); ++k) {
        if (matches(sel_[k], i, under_comm)) mask |= 1u << k;
      }
      selected[i] = (mask & all) == all;
      if (isCommWrapper(t_.name(t_.nodes[i]))) mask |= kUnderComm;
      for (uint32_t c : children[i]) stack.emplace_back(c, mask);
    }
    return build(selected);
  }

 private:
  static constexpr uint32_t kUnderComm = 1u << 31;

  bool matches(const Selector& s, uint32_t i, bool under_comm) const {
    const Node& n = t_.nodes[i];
    switch (s.kind) {
      case SelectorKind::kOp:
        return isExecutable(n.kind) && std::regex_match(std::string(t_.name(n)), s.pattern);
      case SelectorKind::kScope:
        return n.kind != NodeKind::kRoot && std::regex_search(std::string(t_.name(n)), s.pattern);
      case SelectorKind::kPhase:
        return phases_[i] == (s.phase == "forward"    ? Phase::kForward
                              : s.phase == "backward" ? Phase::kBackward
                                                      : Phase::kOptimizer);
      case SelectorKind::kIter:
      case SelectorKind::kStep:
        return n.kind != NodeKind::kRoot && inIteration(s, n.id);
      case SelectorKind::kIds:
        return n.kind != NodeKind::kRoot && n.kind != NodeKind::kMetadata &&
               n.id >= static_cast<uint64_t>(s.lo) && n.id <= static_cast<uint64_t>(s.hi);
      case SelectorKind::kCompute:
        return n.kind == NodeKind::kOperator && !under_comm && !isCommWrapper(t_.name(n));
      case SelectorKind::kComm:
        return isCommKind(n.kind) || isCommWrapper(t_.name(n));
    }
    return false;
  }

  bool inIteration(const Selector& s, trace::NodeId id) const {
    for (size_t k = 0; k < t_.iterations.size(); ++k) {
      const trace::Iteration& it = t_.iterations[k];
      const bool chosen = s.kind == SelectorKind::kIter
                              ? static_cast<int64_t>(k) == s.lo
                              : it.name == "ProfilerStep#" + std::to_string(s.lo);
      if (chosen && id >= it.begin && id < it.end) return true;
    }
    return false;
  }

  // The selected nodes and their non-operator ancestors (metadata always).
  std::vector<uint8_t> keptNodes(std::vector<uint8_t>& selected) const;
  trace::Trace build(std::vector<uint8_t>& selected);

  const trace::Trace& t_;
  const std::vector<Selector>& sel_;
  bool need_phases_ = false;
  std::vector<Phase> phases_;
};

std::vector<uint8_t> SelectionBuilder::keptNodes(std::vector<uint8_t>& selected) const {
  const size_t n = t_.nodes.size();
  std::vector<uint8_t> keep(n, 0);
  size_t executable = 0;
  for (size_t i = 0; i < n; ++i) {
    const Node& node = t_.nodes[i];
    if (node.kind == NodeKind::kMetadata) selected[i] = 1;  // process-group config
    if (!selected[i]) continue;
    keep[i] = 1;
    executable += isExecutable(node.kind) ? 1 : 0;
    // Non-operator ancestors stay (labels, markers, roots); operators that
    // were not chosen go, their chosen children move up to the next kept one.
    for (const Node* p = t_.find(node.parent); p != nullptr && p->id != node.id;) {
      const size_t pi = t_.indexOf(p->id);
      if (keep[pi] || selected[pi]) break;
      if (!isExecutable(p->kind)) keep[pi] = 1;
      const Node* up = t_.find(p->parent);
      if (up == p) break;
      p = up;
    }
  }
  if (executable == 0) {
    std::string list;
    for (const Selector& s : sel_) list += (list.empty() ? "" : " ") + s.text;
    ETB_INPUT_ERROR(SourceLoc{t_.path}, "empty selection: [", list,
                    "] matched no operator or communication node");
  }
  return keep;
}

trace::Trace SelectionBuilder::build(std::vector<uint8_t>& selected) {
  const std::vector<uint8_t> keep = keptNodes(selected);
  const size_t n = t_.nodes.size();
  trace::Trace out = shellOf(t_);
  out.nodes.reserve(static_cast<size_t>(std::count(keep.begin(), keep.end(), 1)));
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    Node node = t_.nodes[i];
    const Node* p = t_.find(node.parent);
    while (p != nullptr && p->id != node.id && !keep[t_.indexOf(p->id)]) {
      const Node* up = t_.find(p->parent);
      p = up == p ? nullptr : up;
    }
    if (node.parent != 0 && node.parent != node.id) node.parent = p == nullptr ? 0 : p->id;
    out.nodes.push_back(std::move(node));
  }
  for (Node& node : out.nodes) {
    auto gone = [&](trace::NodeId d) { return out.find(d) == nullptr; };
    node.data_deps.erase(std::remove_if(node.data_deps.begin(), node.data_deps.end(), gone),
                         node.data_deps.end());
  }
  for (const trace::KernelEvent& k : t_.kernels) {
    if (out.find(k.node) != nullptr) out.kernels.push_back(k);
  }
  out.finalize();  // iterations again from the kept markers
  return out;
}
}  // namespace

trace::Trace selectNodes(const trace::Trace& t, const std::vector<Selector>& selectors) {
  if (selectors.empty()) return t;
  return SelectionBuilder(t, selectors).run();
}

}  // namespace etb::compose
