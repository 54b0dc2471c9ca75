// SPDX-License-Identifier: MIT
//
// Structural checks and repairs on the decoded node list.
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/error.h"
#include "core/pytorch_et/et_json_detail.h"

namespace etb::trace::detail {
namespace {
// Past this many, individual repairs are summarised in one line.
constexpr size_t kMaxRepairs = 10000;

bool isThreadRoot(std::string_view name) {
  return name.rfind("[pytorch|profiler|", 0) == 0 && name.size() > 7 &&
         name.substr(name.size() - 7) == "thread]";
}
}  // namespace

void repairOrThrow(Trace& t, const ReadOptions& options, NodeId node, std::string what) {
  if (options.strict) {
    SourceLoc loc{t.path};
    if (node != 0) {
      loc.node_id = node;
      if (const Node* n = t.find(node)) loc.node_name = std::string(t.name(*n));
    }
    ETB_INPUT_ERROR(loc, what, " (strict mode)");
  }
  if (t.repairs.size() < kMaxRepairs) {
    t.repairs.push_back(Repair{node, std::move(what)});
  } else if (t.repairs.size() == kMaxRepairs) {
    t.repairs.push_back(Repair{0, "more repairs not listed"});
  }
}

namespace {
// torch 1.13's observer writes an op it cannot record (one that takes a
// nested tensor: nn.TransformerEncoder's fast path under a padding mask)
// with id 0, parent 0 and a truncated argument list. The op that called it
// was recorded and replays it, so these are dropped, counted. Sorted by id,
// they are the first nodes.
void dropIdZero(Trace& t, const ReadOptions& options) {
  size_t n = 0;
  while (n < t.nodes.size() && t.nodes[n].id == 0) ++n;
  if (n == 0) return;
  repairOrThrow(t, options, 0,
                std::to_string(n) + " node(s) with id 0 dropped (first: " +
                    std::string(t.name(t.nodes[0])) +
                    "): torch 1.13's observer writes ops on nested tensors so, without their "
                    "arguments; their callers replay them");
  t.nodes.erase(t.nodes.begin(), t.nodes.begin() + static_cast<std::ptrdiff_t>(n));
}
}  // namespace

void checkGraph(Trace& t, const ReadOptions& options) {
  SourceLoc loc{t.path};
  dropIdZero(t, options);
  for (size_t i = 1; i < t.nodes.size(); ++i) {
    if (t.nodes[i].id == t.nodes[i - 1].id) {
      loc.node_id = t.nodes[i].id;
      loc.node_name = std::string(t.name(t.nodes[i]));
      ETB_INPUT_ERROR(loc, "duplicate node id ", t.nodes[i].id);
    }
  }
  // Thread roots by tid, for reparenting orphans to their own thread.
  std::unordered_map<uint64_t, NodeId> thread_root;
  for (const Node& n : t.nodes) {
    if (isThreadRoot(t.name(n))) thread_root.emplace(n.tid, n.id);
  }
  // Each parent's index, found once: siblings share a parent and a first
  // child follows it, so the previous answers usually hit before a search.
  const size_t none = t.nodes.size();
  std::vector<size_t> parent_at(t.nodes.size(), none);
  size_t last = none;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    Node& n = t.nodes[i];
    if (n.parent == 0 || n.parent == n.id) continue;
    if (last != none && t.nodes[last].id == n.parent) {
      parent_at[i] = last;
    } else if (i > 0 && t.nodes[i - 1].id == n.parent) {
      parent_at[i] = last = i - 1;
    } else if ((parent_at[i] = t.indexOf(n.parent)) != none) {
      last = parent_at[i];
    }
    if (parent_at[i] != none) continue;
    auto it = thread_root.find(n.tid);
    const NodeId to = it != thread_root.end() && it->second != n.id ? it->second : 0;
    repairOrThrow(t, options, n.id,
                  "parent " + std::to_string(n.parent) + " was never written; reparented to " +
                      (to != 0 ? "thread root " + std::to_string(to) : std::string("none")));
    n.parent = to;
    if (to != 0) parent_at[i] = t.indexOf(to);
  }
  // Cycles: walk each unvisited chain upwards; meeting a node of the current
  // walk again is a cycle.
  std::vector<uint8_t> state(t.nodes.size(), 0);  // 0 new, 1 on walk, 2 done
  std::vector<size_t> walk;
  for (size_t start = 0; start < t.nodes.size(); ++start) {
    size_t i = start;
    walk.clear();
    while (i < t.nodes.size() && state[i] == 0) {
      state[i] = 1;
      walk.push_back(i);
      i = parent_at[i];
    }
    if (i < t.nodes.size() && state[i] == 1) {
      loc.node_id = t.nodes[i].id;
      loc.node_name = std::string(t.name(t.nodes[i]));
      ETB_INPUT_ERROR(loc, "cycle in the parent chain through node ", t.nodes[i].id);
    }
    for (size_t w : walk) state[w] = 2;
  }
}

uint64_t lineOfNode(std::string_view text, NodeId id) {
  const std::string want = std::to_string(id);
  uint64_t line = 1;
  size_t counted = 0;
  for (size_t pos = text.find("\"id\""); pos != std::string_view::npos;
       pos = text.find("\"id\"", pos + 4)) {
    size_t j = pos + 4;
    while (j < text.size() && (text[j] == ' ' || text[j] == ':')) ++j;
    if (text.compare(j, want.size(), want) != 0) continue;
    const size_t end = j + want.size();
    if (end < text.size() && text[end] >= '0' && text[end] <= '9') continue;
    for (; counted < pos; ++counted) line += text[counted] == '\n';
    return line;
  }
  return 0;
}

}  // namespace etb::trace::detail
