// SPDX-License-Identifier: MIT
#include "replayer/leaf_layout.h"

#include <map>
#include <optional>
#include <string_view>
#include <tuple>

namespace etb::replay::detail {
namespace {

// A tensor's identity without strides (the traces this serves have none).
using Identity = std::tuple<uint64_t, uint64_t, uint64_t, trace::ListId, trace::DType>;

Identity identityOf(const trace::TensorRef& r) {
  return {r.tensor_id, r.storage_id, r.offset, r.shape, r.dtype};
}

bool isTransposingView(std::string_view name) {
  return name == "aten::t" || name == "aten::transpose" || name == "aten::permute" ||
         name == "aten::swapaxes" || name == "aten::swapdims";
}

std::optional<int64_t> intArg(const trace::Node& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i].kind != trace::ValueKind::kInt) return std::nullopt;
  return n.inputs[i].i;
}

// The strides `view` gives a tensor of `in` strides, or nothing when the
// recorded arguments do not describe a valid call.
std::optional<std::vector<int64_t>> applyView(const trace::Node& view, std::string_view name,
                                              std::vector<int64_t> in) {
  const auto rank = static_cast<int64_t>(in.size());
  auto wrap = [rank](int64_t d) { return d < 0 ? d + rank : d; };
  if (name == "aten::t") {
    if (rank == 2) std::swap(in[0], in[1]);
    return in;
  }
  if (name == "aten::permute") {
    if (view.inputs.size() < 2 || view.inputs[1].items.size() != in.size()) return std::nullopt;
    std::vector<int64_t> out(in.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t d = wrap(view.inputs[1].items[i].i);
      if (d < 0 || d >= rank) return std::nullopt;
      out[i] = in[static_cast<size_t>(d)];
    }
    return out;
  }
  const auto d0 = intArg(view, 1), d1 = intArg(view, 2);  // transpose, swapaxes, swapdims
  if (!d0 || !d1) return std::nullopt;
  const int64_t a = wrap(*d0), b = wrap(*d1);
  if (a < 0 || b < 0 || a >= rank || b >= rank) return std::nullopt;
  std::swap(in[static_cast<size_t>(a)], in[static_cast<size_t>(b)]);
  return in;
}

// Shapes follow strides through the same view: the check that the recorded
// call is the one understood.
std::vector<int64_t> permuted(const trace::Node& view, std::string_view name,
                              const std::vector<int64_t>& shape) {
  auto out = applyView(view, name, shape);
  return out ? *out : std::vector<int64_t>{};
}

class Deriver {
 public:
  Deriver(const trace::Trace& t, const Plan& plan) : t_(t) {
    for (size_t s = 0; s < plan.slots.size(); ++s) {
      if (!plan.is_leaf[s]) continue;
      const trace::TensorRef& r = t_.tensors[plan.slot_tensor[s]];
      if (!r.has_strides) leaf_[identityOf(r)] = static_cast<int32_t>(s);
    }
    for (uint32_t i = 0; i < t_.nodes.size(); ++i) {
      const trace::Node& n = t_.nodes[i];
      if (n.outputs.empty() || n.outputs[0].kind != trace::ValueKind::kTensor) continue;
      if (!isTransposingView(t_.name(n)) || n.inputs.empty()) continue;
      if (n.inputs[0].kind != trace::ValueKind::kTensor) continue;
      const Identity id = identityOf(t_.tensors[n.outputs[0].tensor]);
      if (leaf_.count(id) != 0) producer_.emplace(id, i);  // the first one recorded
    }
  }

  std::unordered_map<int32_t, std::vector<int64_t>> run() {
    std::unordered_map<int32_t, std::vector<int64_t>> out;
    for (const auto& [id, node] : producer_) {
      if (auto strides = derive(id, 0)) out[leaf_.at(id)] = std::move(*strides);
    }
    return out;
  }

 private:
  // Strides of the tensor `id` as recorded views made it; depth-limited
  // (chains are short; a cycle of reused ids must not loop).
  std::optional<std::vector<int64_t>> derive(const Identity& id, int depth) {
    auto p = producer_.find(id);
    if (p == producer_.end() || depth > 8) return std::nullopt;
    const trace::Node& view = t_.nodes[p->second];
    const std::string_view name = t_.name(view);
    const trace::TensorRef& in = t_.tensors[view.inputs[0].tensor];
    std::vector<int64_t> in_strides;
    if (auto d = derive(identityOf(in), depth + 1)) {
      in_strides = std::move(*d);
    } else {
      in_strides = recordedStrides(t_, in);
    }
    const auto& out_shape = t_.list(std::get<3>(id));
    if (permuted(view, name, t_.list(in.shape)) != out_shape) return std::nullopt;
    return applyView(view, name, std::move(in_strides));
  }

  const trace::Trace& t_;
  std::map<Identity, int32_t> leaf_;
  std::map<Identity, uint32_t> producer_;
};

}  // namespace

std::unordered_map<int32_t, std::vector<int64_t>> deriveLeafStrides(const trace::Trace& trace,
                                                                   const Plan& plan) {
  return Deriver(trace, plan).run();
}

}  // namespace etb::replay::detail
