// SPDX-License-Identifier: MIT
#include "predictor/reuse_model.h"

#include <algorithm>
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
    const double item = r.itemsize > 0 ? r.itemsize : std::max(trace::dtypeSize(r.dtype), 1);
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

std::vector<double> coldInputShare(const trace::Trace& t,
                                   const std::vector<replay::SelectedNode>& steps,
                                   double llc_bytes) {
  std::vector<double> cold(steps.size(), 0);
  if (llc_bytes <= 0) return cold;
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
        const double since = it == last.end() ? llc_bytes : tree.prefix(pos) - tree.prefix(it->second.first + 1);
        from_dram += bytes - std::min(bytes, std::max(0.0, llc_bytes - since));
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

}  // namespace etb::predict
