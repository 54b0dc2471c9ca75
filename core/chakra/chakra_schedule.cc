// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_schedule.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

namespace etb::trace::chakra {
namespace {

bool isComm(const Node& n) {
  return n.comm >= 0 && (n.kind == NodeKind::kCollective || n.kind == NodeKind::kPointToPoint ||
                         n.kind == NodeKind::kWait);
}

void storagesOf(const Trace& t, const std::vector<Value>& vals, std::vector<uint64_t>* out) {
  for (const Value& v : vals) {
    if (v.kind == ValueKind::kTensor) {
      const TensorRef& r = t.tensors[v.tensor];
      const uint64_t key = r.storage_id != 0 ? r.storage_id : r.tensor_id;
      if (key != 0) out->push_back(key);
    }
    storagesOf(t, v.items, out);
  }
}

int64_t streamOf(const Trace& t, const Node& n) {
  const Attr* a = t.attr(n, "stream");
  return a != nullptr && a->value.kind == ValueKind::kInt ? a->value.i : 0;
}

class Planner {
 public:
  explicit Planner(const Trace& t) : t_(t), kids_(t.children()) {}

  Schedule run() {
    const size_t n = t_.nodes.size();
    s_.data.assign(n, {});
    s_.micros.assign(n, -1);
    s_.ctrl.assign(n, false);
    exclusive_.assign(n, -1);
    for (const Node& x : t_.nodes) s_.synthesized = s_.synthesized || !x.data_deps.empty();
    s_.synthesized = !s_.synthesized;
    for (size_t i = 0; i < n; ++i) {
      const Node& x = t_.nodes[i];
      const bool parent_ok = x.parent != 0 && x.parent != x.id && t_.find(x.parent) != nullptr;
      s_.ctrl[i] = parent_ok && (!s_.synthesized || x.parent < x.id);
    }
    if (!s_.synthesized) {
      explicitDeps();
      return std::move(s_);
    }
    times();
    order();
    round();
    kernels();
    return std::move(s_);
  }

 private:
  void explicitDeps() {
    for (size_t i = 0; i < t_.nodes.size(); ++i) {
      const Node& x = t_.nodes[i];
      for (NodeId d : x.data_deps) add(i, d);
      if (x.dur_us >= 0) exclusive_[i] = x.dur_us;
    }
    for (size_t i = 0; i < t_.nodes.size(); ++i) {
      if (exclusive_[i] >= 0) s_.micros[i] = static_cast<int64_t>(std::llround(exclusive_[i]));
    }
  }

  // Exclusive time per node; comm subtrees as described in the header.
  void times() {
    const size_t n = t_.nodes.size();
    std::vector<bool>& inside = inside_;
    inside.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      if (!isComm(t_.nodes[i])) continue;
      std::vector<uint32_t> stack(kids_[i].begin(), kids_[i].end());
      while (!stack.empty()) {
        const uint32_t k = stack.back();
        stack.pop_back();
        if (inside[k]) continue;
        inside[k] = true;
        stack.insert(stack.end(), kids_[k].begin(), kids_[k].end());
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const Node& x = t_.nodes[i];
      if (x.dur_us < 0) continue;
      if (inside[i] || x.kind == NodeKind::kWait) {
        exclusive_[i] = 0;
      } else if (isComm(x) || x.kind == NodeKind::kKernel) {
        exclusive_[i] = x.dur_us;
      } else {
        exclusive_[i] = std::max(0.0, x.dur_us - timedBelow(i));
      }
    }
  }

  // Time of the nearest timed descendants on the node's thread (through
  // untimed ones, as nesting in the profile would have it).
  double timedBelow(size_t i) const {
    double sum = 0;
    std::vector<uint32_t> stack(kids_[i].begin(), kids_[i].end());
    while (!stack.empty()) {
      const Node& c = t_.nodes[stack.back()];
      const uint32_t k = stack.back();
      stack.pop_back();
      if (c.tid != t_.nodes[i].tid || c.kind == NodeKind::kKernel) continue;
      if (c.dur_us >= 0) {
        sum += c.dur_us;
      } else {
        stack.insert(stack.end(), kids_[k].begin(), kids_[k].end());
      }
    }
    return sum;
  }

  void order() {
    std::unordered_map<uint64_t, size_t> last_in_thread;
    std::unordered_map<int64_t, size_t> last_on_stream;
    std::unordered_map<uint64_t, size_t> writer;  // storage -> node index
    std::map<std::tuple<StrId, int64_t, bool>, size_t> coll_by_seq;
    size_t last_global = kNone;
    for (size_t i = 0; i < t_.nodes.size(); ++i) {
      const Node& x = t_.nodes[i];
      if (x.kind == NodeKind::kKernel) {
        if (s_.ctrl[i]) add(i, x.parent);
        const auto it = last_on_stream.find(streamOf(t_, x));
        if (it != last_on_stream.end()) add(i, t_.nodes[it->second].id);
        last_on_stream[streamOf(t_, x)] = i;
        continue;
      }
      const auto prev = last_in_thread.find(x.tid);
      if (prev != last_in_thread.end()) add(i, t_.nodes[prev->second].id);
      const bool other_ran = last_global != kNone &&
                             (prev == last_in_thread.end() || last_global > prev->second);
      if (other_ran) add(i, t_.nodes[last_global].id);
      if (x.comm >= 0) commDeps(i, writer, coll_by_seq);
      std::vector<uint64_t> outs;
      storagesOf(t_, x.outputs, &outs);
      for (uint64_t s : outs) writer[s] = i;
      last_in_thread[x.tid] = i;
      last_global = i;
    }
  }

  void commDeps(size_t i, const std::unordered_map<uint64_t, size_t>& writer,
                std::map<std::tuple<StrId, int64_t, bool>, size_t>& coll_by_seq) {
    const Node& x = t_.nodes[i];
    const CommInfo& c = t_.comms[static_cast<size_t>(x.comm)];
    if (x.kind == NodeKind::kWait) {
      const auto it = coll_by_seq.find({c.pg_name, c.seq, c.is_p2p});
      if (c.seq >= 0 && it != coll_by_seq.end()) add(i, t_.nodes[it->second].id);
      return;
    }
    if (c.seq >= 0) coll_by_seq[{c.pg_name, c.seq, c.is_p2p}] = i;
    std::vector<uint64_t> ins;
    storagesOf(t_, x.inputs, &ins);
    for (uint64_t s : ins) {
      const auto w = writer.find(s);
      if (w != writer.end()) add(i, t_.nodes[w->second].id);
    }
  }

  // Whole microseconds per node with the rounding error carried along each
  // thread (kernels: each stream), so sums stay exact to 0.5 us.
  void round() {
    std::unordered_map<int64_t, std::pair<double, int64_t>> lane;  // exact sum, written sum
    for (size_t i = 0; i < t_.nodes.size(); ++i) {
      if (exclusive_[i] < 0) continue;
      const Node& x = t_.nodes[i];
      const int64_t key = x.kind == NodeKind::kKernel ? -1 - streamOf(t_, x)
                                                      : static_cast<int64_t>(x.tid);
      auto& [exact, written] = lane[key];
      exact += exclusive_[i];
      const int64_t target = std::llround(exact);
      s_.micros[i] = std::max<int64_t>(0, target - written);
      written += s_.micros[i];
    }
  }

  // Profiler kernels as GPU nodes, in launch order (launching node, then
  // start), rounded with the error carried per stream.
  void kernels() {
    std::vector<size_t> order;
    for (size_t k = 0; k < t_.kernels.size(); ++k) {
      const size_t i = t_.indexOf(t_.kernels[k].node);
      if (i < t_.nodes.size() && !inside_[i] && !isComm(t_.nodes[i])) order.push_back(k);
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const KernelEvent& x = t_.kernels[a];
      const KernelEvent& y = t_.kernels[b];
      return x.node != y.node ? x.node < y.node : x.start_us < y.start_us;
    });
    NodeId next = t_.nodes.empty() ? 1 : t_.nodes.back().id + 1;
    std::map<int64_t, std::pair<NodeId, std::pair<double, int64_t>>> stream;  // last id, sums
    size_t c = 0;  // next comm node index, in id order
    for (size_t k : order) {
      const KernelEvent& e = t_.kernels[k];
      for (; c < t_.nodes.size() && t_.nodes[c].id < e.node; ++c) waitForStreams(c, stream);
      KernelNode kn{k, next++, {e.node}, 0};
      auto& [last, sums] = stream[e.stream];
      if (last != 0) kn.data.push_back(last);
      sums.first += std::max(0.0, e.dur_us);
      kn.micros = std::max<int64_t>(0, std::llround(sums.first) - sums.second);
      sums.second += kn.micros;
      last = kn.id;
      s_.kernels.push_back(std::move(kn));
    }
    for (; c < t_.nodes.size(); ++c) waitForStreams(c, stream);
  }

  template <typename Streams>
  void waitForStreams(size_t i, const Streams& streams) {
    const Node& x = t_.nodes[i];
    if (!isComm(x) || x.kind == NodeKind::kWait) return;
    for (const auto& [id, s] : streams) s_.data[i].push_back(s.first);
  }

  void add(size_t i, NodeId d) {
    const Node& x = t_.nodes[i];
    if (d == x.id || t_.find(d) == nullptr) return;
    std::vector<NodeId>& v = s_.data[i];
    if (std::find(v.begin(), v.end(), d) == v.end()) v.push_back(d);
  }

  static constexpr size_t kNone = static_cast<size_t>(-1);
  const Trace& t_;
  const std::vector<std::vector<uint32_t>> kids_;
  Schedule s_;
  std::vector<double> exclusive_;
  std::vector<bool> inside_;  // beneath a communication node
};

}  // namespace

bool isScheduled(const Node& n) { return n.kind != NodeKind::kKernel; }

Schedule planSchedule(const Trace& t) { return Planner(t).run(); }

}  // namespace etb::trace::chakra
