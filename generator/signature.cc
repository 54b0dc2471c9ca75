// SPDX-License-Identifier: MIT
#include "generator/signature.h"

#include <algorithm>

#include "replayer/op_selection.h"

namespace etb::gen {

OpSignature opSignature(const trace::Trace& t, int iteration) {
  OpSignature sig;
  const trace::Iteration it = replay::chooseIteration(t, iteration);
  for (const replay::SelectedNode& s : replay::selectNodes(t, it)) {
    const trace::Node& n = t.nodes[s.index];
    if (s.is_comm && n.comm >= 0 && static_cast<size_t>(n.comm) < t.comms.size()) {
      ++sig["comm:" + std::string(trace::commTypeName(t.comms[static_cast<size_t>(n.comm)].type))];
    } else {
      ++sig[std::string(t.name(n))];
    }
  }
  return sig;
}

double similarity(const OpSignature& a, const OpSignature& b) {
  uint64_t lo = 0, hi = 0;
  auto ia = a.begin();
  auto ib = b.begin();
  while (ia != a.end() || ib != b.end()) {
    if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
      hi += (ia++)->second;
    } else if (ia == a.end() || ib->first < ia->first) {
      hi += (ib++)->second;
    } else {
      lo += std::min(ia->second, ib->second);
      hi += std::max(ia->second, ib->second);
      ++ia;
      ++ib;
    }
  }
  return hi == 0 ? 1.0 : static_cast<double>(lo) / static_cast<double>(hi);
}

double coverage(const OpSignature& part, const OpSignature& whole) {
  uint64_t covered = 0, total = 0;
  for (const auto& [name, count] : whole) {
    total += count;
    if (part.count(name)) covered += count;
  }
  return total == 0 ? 1.0 : static_cast<double>(covered) / static_cast<double>(total);
}

}  // namespace etb::gen
