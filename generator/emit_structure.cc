// SPDX-License-Identifier: MIT
#include "generator/emit_structure.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>

#include "core/base/log.h"
#include "generator/emit_values.h"
#include "generator/escape.h"

namespace etb::gen {
namespace {

using Spans = std::vector<std::pair<double, double>>;  // merged [lo, hi], ascending

// The replayed ops' spans on `tid` (0 = every thread), merged.
Spans selectedSpans(const trace::Trace& t, const std::vector<replay::SelectedNode>& selected,
                    uint64_t tid) {
  Spans spans;
  for (const replay::SelectedNode& s : selected) {
    const trace::Node& n = t.nodes[s.index];
    if (n.start_us < 0 || n.dur_us < 0 || (tid != 0 && n.tid != tid)) continue;
    spans.emplace_back(n.start_us, n.start_us + n.dur_us);
  }
  std::sort(spans.begin(), spans.end());
  Spans merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

bool insideSpans(const Spans& spans, double lo, double hi) {
  auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(lo, 1e300));
  if (it == spans.begin()) return false;
  --it;
  return lo >= it->first && hi <= it->second;
}

// Nodes whose start or end host-time emulation may count (as host_time.cc's
// countBoundaries reads them): timed, not kernels, in the iteration, on the
// marker's thread, not within a replayed op's span.
std::vector<uint32_t> hostEvents(const trace::Trace& t, const trace::Iteration& it,
                                 const std::vector<char>& is_selected) {
  std::vector<uint32_t> out;
  if (it.start_us < 0) return out;
  const trace::Node* marker = t.find(it.marker);
  const uint64_t tid = marker != nullptr ? marker->tid : 0;
  std::vector<replay::SelectedNode> selected;
  for (uint32_t i = 0; i < t.nodes.size(); ++i) {
    if (is_selected[i]) selected.push_back({i, false});
  }
  const Spans spans = selectedSpans(t, selected, tid);
  for (uint32_t i = 0; i < t.nodes.size(); ++i) {
    const trace::Node& n = t.nodes[i];
    if (is_selected[i] || n.id == it.marker || n.id < it.begin || n.id >= it.end) continue;
    if (n.start_us < 0 || n.dur_us < 0 || n.kind == trace::NodeKind::kKernel) continue;
    if (n.kind == trace::NodeKind::kMemory || (tid != 0 && n.tid != tid)) continue;
    if (!insideSpans(spans, n.start_us, n.start_us + n.dur_us)) out.push_back(i);
  }
  return out;
}

// Every ancestor of `index` (the call-stack chain; a cycle stops it).
void addAncestors(const trace::Trace& t, uint32_t index, std::set<uint32_t>& into) {
  const trace::Node* n = &t.nodes[index];
  for (size_t depth = 0; depth < t.nodes.size(); ++depth) {
    if (n->parent == 0 || n->parent == n->id) return;
    const size_t p = t.indexOf(n->parent);
    if (p == t.nodes.size() || !into.insert(static_cast<uint32_t>(p)).second) return;
    n = &t.nodes[p];
  }
}

// Each node's nearest ancestor among `present` (absent from the map: a root).
std::unordered_map<uint32_t, uint64_t> nearestParents(const trace::Trace& t,
                                                      const std::vector<char>& present) {
  std::unordered_map<uint32_t, uint64_t> out;
  for (uint32_t i = 0; i < t.nodes.size(); ++i) {
    if (!present[i]) continue;
    const trace::Node* up = t.findUp(t.nodes[i], [&](const trace::Node& p) {
      return &p != &t.nodes[i] && present[t.indexOf(p.id)];
    });
    if (up != nullptr) out[i] = up->id;
  }
  return out;
}

// The ids the replayer selects from the trace the program would build.
std::vector<uint64_t> selectedInProgram(const trace::Trace& t, const trace::Iteration& it,
                                        const std::vector<char>& present,
                                        const std::unordered_map<uint32_t, uint64_t>& parent) {
  trace::Trace mini;
  mini.strings = t.strings;
  for (uint32_t i = 0; i < t.nodes.size(); ++i) {
    if (!present[i]) continue;
    trace::Node n;
    n.id = t.nodes[i].id;
    n.name = t.nodes[i].name;
    n.kind = t.nodes[i].kind;
    auto p = parent.find(i);
    n.parent = p == parent.end() ? 0 : p->second;
    mini.nodes.push_back(std::move(n));
  }
  std::vector<uint64_t> ids;
  for (const replay::SelectedNode& s : replay::selectNodes(mini, it)) ids.push_back(mini.nodes[s.index].id);
  return ids;
}
}  // namespace

TraceStructure traceStructure(const trace::Trace& t, const trace::Iteration& it,
                              const std::vector<replay::SelectedNode>& selected) {
  std::vector<char> is_selected(t.nodes.size(), 0);
  std::vector<uint64_t> want;
  for (const replay::SelectedNode& s : selected) {
    is_selected[s.index] = 1;
    want.push_back(t.nodes[s.index].id);
  }
  const std::vector<uint32_t> host = hostEvents(t, it, is_selected);
  std::set<uint32_t> keep(host.begin(), host.end());
  if (size_t m = t.indexOf(it.marker); it.marker != 0 && m < t.nodes.size()) keep.insert(static_cast<uint32_t>(m));
  for (const replay::SelectedNode& s : selected) addAncestors(t, s.index, keep);
  for (uint32_t h : host) addAncestors(t, h, keep);
  // A replayed op is emitted as an op, never again as structure: a label
  // below it that outlasts it (gloo:send after c10d::send returned, on a
  // pipeline's stage) made it an ancestor of a host event, and the program
  // stopped at start-up with "node 113 added twice".
  for (auto k = keep.begin(); k != keep.end();) k = is_selected[*k] ? keep.erase(k) : std::next(k);
  TraceStructure out;
  // Kept operators the smaller trace would replay (their replayed parent was
  // not kept) are left out, and the check repeated; counted, not hidden.
  for (int round = 0; round < 16; ++round) {
    std::vector<char> present = is_selected;
    for (uint32_t k : keep) present[k] = 1;
    out.parent = nearestParents(t, present);
    const std::vector<uint64_t> got = selectedInProgram(t, it, present, out.parent);
    if (got == want) {
      out.kept.assign(keep.begin(), keep.end());
      out.host_events = static_cast<size_t>(std::count_if(
          host.begin(), host.end(), [&](uint32_t h) { return keep.count(h) != 0; }));
      out.left_out = host.size() - out.host_events;
      return out;
    }
    std::set<uint64_t> extra;
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(),
                        std::inserter(extra, extra.begin()));
    const size_t before = keep.size();
    for (auto k = keep.begin(); k != keep.end();) k = extra.count(t.nodes[*k].id) ? keep.erase(k) : std::next(k);
    if (keep.size() == before) break;  // the replayed set itself changed: give up
  }
  ETB_LOG(kWarn) << t.path << ": kept no labels or events beside the replayed ops (the replayer "
                 << "would select other ops from them); --host-time emulate and --autograd record "
                 << "of the generated program will differ from et_replay's";
  return {};
}

std::string structureFunction(const trace::Trace& t, const TraceStructure& s,
                              const std::string& function) {
  std::ostringstream os;
  os << "// " << s.kept.size() << " nodes the replay modes read besides the replayed ops\n"
     << "// (labels, the ProfilerStep marker, events between ops): id, parent, kind, thread,\n"
     << "// start and duration (us), name.\n"
     << "void " << function << "(TraceBuilder& b) {\n"
     << "  static const StructureNode kNodes[] = {\n";
  for (uint32_t k : s.kept) {
    const trace::Node& n = t.nodes[k];
    auto p = s.parent.find(k);
    os << "      {" << n.id << "u, " << (p == s.parent.end() ? 0 : p->second) << "u, "
       << enumName(n.kind) << ", " << n.tid << "u, " << cDouble(n.start_us) << ", "
       << cDouble(n.dur_us) << ", " << sv(t.name(n)) << "},\n";
  }
  if (s.kept.empty()) os << "      {0u, 0u, NodeKind::kLabel, 0u, -1.0, -1.0, ETB_S(\"\")},\n";
  os << "  };\n  b.structure(kNodes, " << s.kept.size() << ");\n}\n\n";
  return os.str();
}

}  // namespace etb::gen
