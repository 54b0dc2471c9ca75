// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_graph.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace etb::trace::chakra {
namespace {
// Indexed by CollectiveCommType (ALL_REDUCE=0 .. BARRIER=9). REDUCE_SCATTER_BLOCK
// has no etb counterpart of its own; it is a reduce-scatter.
constexpr std::array<CommType, 10> kFromChakra{{
    CommType::kAllReduce, CommType::kReduce, CommType::kAllGather, CommType::kGather,
    CommType::kScatter, CommType::kBroadcast, CommType::kAllToAll,
    CommType::kReduceScatter, CommType::kReduceScatter, CommType::kBarrier,
}};
}  // namespace

std::optional<NodeId> findCycle(const std::vector<NodeId>& ids,
                                const std::vector<std::vector<NodeId>>& deps) {
  const size_t n = ids.size();
  std::vector<uint32_t> pending(n, 0);
  std::vector<std::vector<uint32_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    for (NodeId d : deps[i]) {
      const auto it = std::lower_bound(ids.begin(), ids.end(), d);
      if (it == ids.end() || *it != d) continue;
      users[static_cast<size_t>(it - ids.begin())].push_back(static_cast<uint32_t>(i));
      ++pending[i];
    }
  }
  std::vector<uint32_t> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(static_cast<uint32_t>(i));
  }
  size_t done = 0;
  while (!ready.empty()) {
    const uint32_t i = ready.back();
    ready.pop_back();
    ++done;
    for (uint32_t u : users[i]) {
      if (--pending[u] == 0) ready.push_back(u);
    }
  }
  if (done == n) return std::nullopt;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] != 0) return ids[i];
  }
  return std::nullopt;
}

std::vector<uint32_t> components(const std::vector<NodeId>& ids,
                                 const std::vector<std::vector<NodeId>>& deps,
                                 std::vector<uint32_t>* sizes) {
  const uint32_t n = static_cast<uint32_t>(ids.size());
  constexpr uint32_t kUnset = ~0u;
  std::vector<std::vector<uint32_t>> adj(n);
  for (uint32_t i = 0; i < n; ++i) {
    for (NodeId d : deps[i]) {
      const auto it = std::lower_bound(ids.begin(), ids.end(), d);
      if (it != ids.end() && *it == d) adj[i].push_back(static_cast<uint32_t>(it - ids.begin()));
    }
  }
  std::vector<uint32_t> index(n, kUnset), low(n, 0), comp(n, kUnset);
  std::vector<uint32_t> stack, frames, edge;
  std::vector<bool> on_stack(n, false);
  uint32_t counter = 0;
  sizes->clear();
  for (uint32_t root = 0; root < n; ++root) {
    if (index[root] != kUnset) continue;
    frames.push_back(root);
    edge.push_back(0);
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!frames.empty()) {
      const uint32_t v = frames.back();
      if (edge.back() < adj[v].size()) {
        const uint32_t w = adj[v][edge.back()++];
        if (index[w] == kUnset) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = true;
          frames.push_back(w);
          edge.push_back(0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      frames.pop_back();
      edge.pop_back();
      if (!frames.empty()) low[frames.back()] = std::min(low[frames.back()], low[v]);
      if (low[v] != index[v]) continue;
      const uint32_t id = static_cast<uint32_t>(sizes->size());
      sizes->push_back(0);
      uint32_t w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        comp[w] = id;
        ++(*sizes)[id];
      } while (w != v);
    }
  }
  return comp;
}

int64_t rankFromPath(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) {
    name.resize(name.size() - 3);
  }
  if (name.size() < 4 || name.compare(name.size() - 3, 3, ".et") != 0) return -1;
  name.resize(name.size() - 3);
  const size_t dot = name.find_last_of('.');
  if (dot == std::string::npos || dot + 1 == name.size() || name.size() - dot > 10) return -1;
  int64_t rank = 0;
  for (size_t i = dot + 1; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    rank = rank * 10 + (name[i] - '0');
  }
  return rank;
}

CommType commTypeFromChakra(int64_t value) {
  if (value < 0 || value >= static_cast<int64_t>(kFromChakra.size())) return CommType::kUnknown;
  return kFromChakra[static_cast<size_t>(value)];
}

int64_t chakraCommType(CommType type) {
  switch (type) {
    case CommType::kAllReduce: return 0;
    case CommType::kReduce: return 1;
    case CommType::kAllGather: return 2;
    case CommType::kGather: return 3;
    case CommType::kScatter: return 4;
    case CommType::kBroadcast: return 5;
    case CommType::kAllToAll:
    case CommType::kAllToAllV: return 6;
    case CommType::kReduceScatter: return 7;
    case CommType::kBarrier: return 9;
    default: return -1;
  }
}

}  // namespace etb::trace::chakra
