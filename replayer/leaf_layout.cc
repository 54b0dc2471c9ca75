// SPDX-License-Identifier: MIT
#include "replayer/leaf_layout.h"

#include <optional>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <string_view>

#include "replayer/op_plan.h"

namespace etb::replay {
namespace {

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
      if (view.inputs[1].items[i].kind != trace::ValueKind::kInt) return std::nullopt;
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

using Identity = ViewLayouts::Identity;

Identity identityOf(const trace::TensorRef& r) {
  return {r.tensor_id, r.storage_id, r.offset, r.shape, r.dtype};
}

// The strides of tensor `id` as the recorded views (`producer`: the view op
// that made each tensor) made it; depth-limited (chains are short; a cycle
// through reused ids must not loop).
std::optional<std::vector<int64_t>> deriveStrides(const trace::Trace& t,
                                                  const std::map<Identity, uint32_t>& producer,
                                                  const Identity& id, int depth) {
  auto p = producer.find(id);
  if (p == producer.end() || depth > 8) return std::nullopt;
  const trace::Node& view = t.nodes[p->second];
  const std::string_view name = t.name(view);
  const trace::TensorRef& in = t.tensors[view.inputs[0].tensor];
  std::optional<std::vector<int64_t>> in_strides =
      deriveStrides(t, producer, identityOf(in), depth + 1);
  if (!in_strides) in_strides = detail::recordedStrides(t, in);
  if (permuted(view, name, t.list(in.shape)) != t.list(std::get<3>(id))) return std::nullopt;
  return applyView(view, name, std::move(*in_strides));
}

}  // namespace

ViewLayouts::ViewLayouts(const trace::Trace& t, const std::vector<SelectedNode>& selected) {
  std::set<Identity> produced;  // by the replayed nodes: not leaves
  for (const SelectedNode& s : selected) {
    for (const trace::Value& v : t.nodes[s.index].outputs) {
      if (v.kind == trace::ValueKind::kTensor) produced.insert(identityOf(t.tensors[v.tensor]));
      for (const trace::Value& item : v.items) {
        if (item.kind == trace::ValueKind::kTensor) {
          produced.insert(identityOf(t.tensors[item.tensor]));
        }
      }
    }
  }
  std::map<Identity, uint32_t> producer;  // node index of the view op
  for (uint32_t i = 0; i < t.nodes.size(); ++i) {
    const trace::Node& n = t.nodes[i];
    if (n.outputs.empty() || n.outputs[0].kind != trace::ValueKind::kTensor) continue;
    if (!isTransposingView(t.name(n)) || n.inputs.empty()) continue;
    if (n.inputs[0].kind != trace::ValueKind::kTensor) continue;
    const trace::TensorRef& out = t.tensors[n.outputs[0].tensor];
    if (out.has_strides || produced.count(identityOf(out)) != 0) continue;
    producer.emplace(identityOf(out), i);  // the first one recorded
  }
  for (const auto& [id, node] : producer) {
    if (auto strides = deriveStrides(t, producer, id, 0)) {
      strides_.emplace(id, std::move(*strides));
    }
  }
}

const std::vector<int64_t>* ViewLayouts::find(const trace::TensorRef& ref) const {
  if (ref.has_strides) return nullptr;
  auto it = strides_.find(identityOf(ref));
  return it == strides_.end() ? nullptr : &it->second;
}

StorageGenerations::StorageGenerations(const trace::Trace& t) : buffer_(t.tensors.size(), 0) {
  using Key = std::tuple<uint64_t, uint64_t, uint64_t, trace::ListId, trace::ListId, trace::DType,
                         trace::StrId>;
  using Storage = std::pair<uint64_t, trace::StrId>;
  const auto keyOf = [](const trace::TensorRef& r) {
    return Key{r.tensor_id, r.storage_id, r.offset, r.shape, r.strides, r.dtype, r.device};
  };
  std::map<Key, uint32_t> gen_of;
  std::map<Storage, uint32_t> current, count;  // generation now, generations after the first
  std::map<Storage, bool> by_output;  // the current generation began as an op's output
  const auto each = [&t](const std::vector<trace::Value>& values, auto&& fn) {
    for (const trace::Value& v : values) {
      if (v.kind == trace::ValueKind::kTensor) fn(t.tensors[v.tensor]);
      for (const trace::Value& item : v.items) {
        if (item.kind == trace::ValueKind::kTensor) fn(t.tensors[item.tensor]);
      }
    }
  };
  for (const trace::Node& n : t.nodes) {
    std::set<Storage> held, started;
    each(n.inputs, [&](const trace::TensorRef& r) {
      const Storage s{r.storage_id, r.device};
      held.insert(s);
      const Key k = keyOf(r);
      if (gen_of.count(k) != 0) return;
      // A tensor no recorded op made: made before the recording (a
      // parameter, its views) where its storage has been so far, else by
      // code the recording does not show, after the allocation the storage
      // last stood for: a scalar the optimizer reads had resnet18's
      // save_mean's address. Scalars are their own allocations (Python
      // numbers wrapped for a call, one after another at one address: a
      // transformer's Adam read its bias correction from another's).
      if ((r.numel <= 1 && current.count(s) != 0) || by_output[s]) {
        current[s] = ++count[s];
        by_output[s] = false;
      }
      gen_of.emplace(k, current[s]);
    });
    each(n.outputs, [&](const trace::TensorRef& r) {
      const Key k = keyOf(r);
      if (r.storage_id == 0 || gen_of.count(k) != 0) return;
      const Storage s{r.storage_id, r.device};
      // A storage none of the op's inputs holds: a new allocation, the
      // storage's next generation where the id was seen before.
      if (held.count(s) == 0 && started.insert(s).second) {
        if (current.count(s) != 0) current[s] = ++count[s];
        else current[s] = 0;
        by_output[s] = true;
      }
      gen_of.emplace(k, current[s]);
    });
  }
  uint64_t next = 0;
  for (const trace::TensorRef& r : t.tensors) next = std::max(next, r.storage_id);
  std::map<std::pair<Storage, uint32_t>, uint64_t> ids;
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const trace::TensorRef& r = t.tensors[i];
    const auto g = gen_of.find(keyOf(r));
    if (r.storage_id == 0 || g == gen_of.end() || g->second == 0) {
      buffer_[i] = r.storage_id;
      continue;
    }
    const auto [it, fresh] = ids.emplace(std::make_pair(Storage{r.storage_id, r.device}, g->second), 0);
    if (fresh) it->second = ++next;
    buffer_[i] = it->second;
  }
  for (const auto& [s, c] : count) reused_ += c > 0 ? 1 : 0;
}

}  // namespace etb::replay
