// SPDX-License-Identifier: MIT
#include "composer/summary.h"

#include <algorithm>
#include <iomanip>

#include "replayer/op_selection.h"

namespace etb::compose {
namespace {

std::string sizesText(const std::set<uint64_t>& sizes) {
  std::string s;
  size_t shown = 0;
  for (uint64_t b : sizes) {
    if (shown++ == 4) return s + ", ...";
    s += (s.empty() ? "" : ", ") + std::to_string(b);
  }
  return s.empty() ? "-" : s;
}

void printOps(const TraceSummary& a, const TraceSummary& b, std::ostream& os) {
  std::set<std::string> names;
  for (const auto& [k, v] : a.ops) names.insert(k);
  for (const auto& [k, v] : b.ops) names.insert(k);
  os << "# ops (replayed top-level, rank 0)\n"
     << std::left << std::setw(48) << "# op" << std::right << std::setw(10) << "before"
     << std::setw(10) << "after" << "\n";
  size_t unchanged = 0;
  for (const std::string& n : names) {
    const uint64_t x = a.ops.count(n) ? a.ops.at(n) : 0, y = b.ops.count(n) ? b.ops.at(n) : 0;
    if (x == y) {
      ++unchanged;
      continue;
    }
    os << std::left << std::setw(48) << n << std::right << std::setw(10) << x << std::setw(10) << y << "\n";
  }
  os << "# " << unchanged << " op names with unchanged counts not listed\n";
}

void printCollectives(const TraceSummary& a, const TraceSummary& b, std::ostream& os) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a.collectives) keys.insert(k);
  for (const auto& [k, v] : b.collectives) keys.insert(k);
  if (keys.empty()) return;
  os << "# collectives (rank 0): calls and bytes per call, before -> after\n";
  for (const std::string& k : keys) {
    const CollectiveSummary x = a.collectives.count(k) ? a.collectives.at(k) : CollectiveSummary{};
    const CollectiveSummary y = b.collectives.count(k) ? b.collectives.at(k) : CollectiveSummary{};
    os << k << ": " << x.calls << " -> " << y.calls << " calls; bytes/call [" << sizesText(x.call_bytes)
       << "] -> [" << sizesText(y.call_bytes) << "]\n";
  }
}
}  // namespace

TraceSummary summarize(const std::vector<trace::Trace>& ranks) {
  TraceSummary s;
  if (ranks.empty()) return s;
  const trace::Trace& t = ranks[0];
  s.ranks = ranks.size();
  s.nodes = t.nodes.size();
  s.iterations = t.iterations.size();
  std::vector<trace::Iteration> its = t.iterations;
  if (its.empty()) its.push_back(replay::chooseIteration(t, 0));
  for (const trace::Iteration& it : its) {
    for (const replay::SelectedNode& sel : replay::selectNodes(t, it)) {
      const trace::Node& n = t.nodes[sel.index];
      ++s.ops[std::string(t.name(n))];
      if (n.comm < 0) continue;
      const trace::CommInfo& c = t.comms[static_cast<size_t>(n.comm)];
      std::string group = c.pg >= 0 ? t.process_groups[static_cast<size_t>(c.pg)].name : "world";
      CollectiveSummary& cs = s.collectives[std::string(trace::commTypeName(c.type)) + " @ group " + group];
      // Per-rank message size: the larger buffer (all_gather: the output).
      const int size = trace::dtypeSize(c.dtype) > 0 ? trace::dtypeSize(c.dtype) : 4;
      const uint64_t bytes = std::max(c.in_elems, c.out_elems) * static_cast<uint64_t>(size);
      ++cs.calls;
      cs.bytes += bytes;
      cs.call_bytes.insert(bytes);
    }
  }
  return s;
}

void printChanges(const TraceSummary& before, const TraceSummary& after, std::ostream& os) {
  os << "# ranks " << before.ranks << " -> " << after.ranks << ", nodes (rank 0) " << before.nodes
     << " -> " << after.nodes << ", iterations " << before.iterations << " -> " << after.iterations
     << "\n";
  printOps(before, after, os);
  printCollectives(before, after, os);
}

}  // namespace etb::compose
