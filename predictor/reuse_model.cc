// SPDX-License-Identifier: MIT
#include "predictor/reuse_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>

namespace etb::predict {
namespace {

// The distinct storages a node reads or writes, with their bytes.
std::map<uint64_t, double> storagesOf(const trace::Trace& t, const std::vector<trace::Value>& values) {
  std::map<uint64_t, double> out;
  const auto add = [&](const trace::Value& v) {
    if (v.kind != trace::ValueKind::kTensor) return;
    const trace::TensorRef& r = t.tensors[v.tensor];
    const double item = std::max(trace::itemBytes(r), 1);
    const double bytes = static_cast<double>(r.numel) * item;
    if (bytes > 0) out[r.storage_id] = std::max(out[r.storage_id], bytes);
  };
  for (const trace::Value& v : values) {
    add(v);
    if (v.kind == trace::ValueKind::kList || v.kind == trace::ValueKind::kTuple) {
      for (const trace::Value& item : v.items) add(item);
    }
  }
  return out;
}

// Bytes at each access position, summed over ranges (Fenwick tree): a
// storage keeps its bytes at its latest access only, so the sum after a
// storage's previous access is the distinct bytes touched since (the exact
// LRU stack distance).
class LatestAccess {
 public:
  explicit LatestAccess(size_t n) : tree_(n + 1, 0) {}
  void add(size_t pos, double v) {
    for (size_t i = pos + 1; i < tree_.size(); i += i & (~i + 1)) tree_[i] += v;
  }
  double prefix(size_t pos) const {  // sum over [0, pos)
    double s = 0;
    for (size_t i = pos; i > 0; i -= i & (~i + 1)) s += tree_[i];
    return s;
  }

 private:
  std::vector<double> tree_;
};
}  // namespace

namespace {
// Bytes of a `bytes` tensor that come from DRAM when `since` bytes of other
// traffic followed its last use (since < 0: never used before).
using EvictedBytes = std::function<double(double since, double bytes)>;

std::vector<double> inputShare(const trace::Trace& t, const std::vector<replay::SelectedNode>& steps,
                               const EvictedBytes& evicted) {
  std::vector<double> cold(steps.size(), 0);
  // Each step's inputs, then everything it touched (inputs and outputs).
  std::vector<std::map<uint64_t, double>> ins(steps.size()), touched(steps.size());
  size_t accesses = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].is_comm) continue;
    const trace::Node& n = t.nodes[steps[i].index];
    ins[i] = storagesOf(t, n.inputs);
    touched[i] = ins[i];
    for (const auto& [sid, bytes] : storagesOf(t, n.outputs)) touched[i][sid] = bytes;
    accesses += touched[i].size();
  }
  LatestAccess tree(2 * accesses);
  std::unordered_map<uint64_t, std::pair<size_t, double>> last;  // storage -> (position, bytes)
  size_t pos = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the first pass gives kept tensors a last use
    for (size_t i = 0; i < steps.size(); ++i) {
      double total = 0, from_dram = 0;
      for (const auto& [sid, bytes] : ins[i]) {
        total += bytes;
        const auto it = last.find(sid);
        const double since = it == last.end() ? -1 : tree.prefix(pos) - tree.prefix(it->second.first + 1);
        from_dram += evicted(since, bytes);
      }
      cold[i] = total > 0 ? from_dram / total : 0;
      for (const auto& [sid, bytes] : touched[i]) {
        const auto it = last.find(sid);
        if (it != last.end()) tree.add(it->second.first, -it->second.second);
        tree.add(pos, bytes);
        last[sid] = {pos++, bytes};
      }
    }
  }
  return cold;
}
}  // namespace

std::vector<double> coldInputShare(const trace::Trace& t,
                                   const std::vector<replay::SelectedNode>& steps,
                                   double llc_bytes) {
  if (llc_bytes <= 0) return std::vector<double>(steps.size(), 0);
  // LRU: the lines beyond the cache less the distance are gone.
  return inputShare(t, steps, [llc_bytes](double since, double bytes) {
    if (since < 0) return bytes;
    return bytes - std::min(bytes, std::max(0.0, llc_bytes - since));
  });
}

double evictedShare(const std::vector<SizePoint>& r, double d) {
  if (r.empty()) return 0;
  if (d <= r.front().bytes) return r.front().us;
  if (d >= r.back().bytes) return r.back().us;
  const auto hi = std::lower_bound(r.begin(), r.end(), d,
                                   [](const SizePoint& p, double x) { return p.bytes < x; });
  const auto lo = hi - 1;
  const double f = std::log(d / lo->bytes) / std::log(hi->bytes / lo->bytes);
  return lo->us + f * (hi->us - lo->us);
}

std::vector<double> coldInputShare(const trace::Trace& t,
                                   const std::vector<replay::SelectedNode>& steps,
                                   const std::vector<SizePoint>& retention) {
  if (retention.empty()) return std::vector<double>(steps.size(), 0);
  // A tensor's lines lie at distances since .. since + bytes (its own
  // earlier lines came after the later ones' last use): the mean share over
  // 16 slices of it.
  return inputShare(t, steps, [&retention](double since, double bytes) {
    if (since < 0) return bytes;
    constexpr int kSlices = 16;
    double share = 0;
    for (int k = 0; k < kSlices; ++k) share += evictedShare(retention, since + (k + 0.5) / kSlices * bytes);
    return bytes * share / kSlices;
  });
}

std::vector<int> kindReuseDistance(const std::vector<std::string>& kinds) {
  // Two passes over the iteration: the second sees every kind's last call,
  // the previous iteration's where it is the first of its kind in this one.
  std::vector<int> out(kinds.size(), 0);
  std::vector<const std::string*> stack;  // most recent first
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < kinds.size(); ++i) {
      const auto it = std::find_if(stack.begin(), stack.end(),
                                   [&](const std::string* k) { return *k == kinds[i]; });
      const int depth = static_cast<int>(it - stack.begin());
      if (it != stack.end()) stack.erase(it);
      stack.insert(stack.begin(), &kinds[i]);
      if (pass == 1) out[i] = depth;
    }
  }
  return out;
}

}  // namespace etb::predict
