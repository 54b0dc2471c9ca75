// SPDX-License-Identifier: MIT
#include "replayer/index_rules.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string_view>

#include "core/base/log.h"

namespace etb::replay::detail {
namespace {
constexpr int kNone = -1;
constexpr int kClassDim = -2;  // dim 1 of the input, or 0 when it is 1-D

// index_arg takes values in [0, size): size is the recorded size of
// table_arg along `dim` (or along the int held by dim_arg), or the int held
// by bound_arg. offsets_arg (embedding_bag) gets offsets into index_arg.
struct IndexRule {
  std::string_view op;
  int index_arg, table_arg, dim, dim_arg, bound_arg, offsets_arg;
  bool index_list;  // index_arg is a Tensor?[] indexing dims 0, 1, ...
};
constexpr std::array<IndexRule, 22> kRules{{
    {"aten::embedding", 1, 0, 0, kNone, kNone, kNone, false},
    {"aten::embedding_bag", 1, 0, 0, kNone, kNone, 2, false},
    {"aten::_embedding_bag", 1, 0, 0, kNone, kNone, 2, false},
    {"aten::_embedding_bag_forward_only", 1, 0, 0, kNone, kNone, 2, false},
    {"aten::embedding_backward", 1, kNone, 0, kNone, 2, kNone, false},
    {"aten::embedding_dense_backward", 1, kNone, 0, kNone, 2, kNone, false},
    {"aten::_embedding_bag_backward", 1, kNone, 0, kNone, 6, 2, false},
    {"aten::_embedding_bag_dense_backward", 1, kNone, 0, kNone, 5, 2, false},
    {"aten::index_select", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::gather", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::scatter", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::scatter_", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::scatter_add", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::scatter_add_", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::index_add", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::index_add_", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::index_copy_", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::index_fill_", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::index", 1, 0, 0, kNone, kNone, kNone, true},
    {"aten::index_put_", 1, 0, 0, kNone, kNone, kNone, true},
    {"aten::nll_loss_forward", 1, 0, kClassDim, kNone, kNone, kNone, false},
    {"aten::nll_loss_backward", 2, 1, kClassDim, kNone, kNone, kNone, false},
}};

const std::vector<int64_t>* shapeOf(const trace::Trace& t, const trace::Node& n, int arg) {
  if (arg < 0 || static_cast<size_t>(arg) >= n.inputs.size()) return nullptr;
  const trace::Value& v = n.inputs[static_cast<size_t>(arg)];
  if (v.kind != trace::ValueKind::kTensor) return nullptr;
  return &t.list(t.tensors[v.tensor].shape);
}

bool intArg(const trace::Node& n, int arg, int64_t* out) {
  if (arg < 0 || static_cast<size_t>(arg) >= n.inputs.size()) return false;
  const trace::Value& v = n.inputs[static_cast<size_t>(arg)];
  if (v.kind != trace::ValueKind::kInt) return false;
  *out = v.i;
  return true;
}

// Size along `dim` (negative dims count from the back); -1 when unknown.
int64_t sizeAt(const std::vector<int64_t>* shape, int64_t dim) {
  if (shape == nullptr || shape->empty()) return -1;
  const int64_t rank = static_cast<int64_t>(shape->size());
  if (dim == kClassDim) dim = rank >= 2 ? 1 : 0;
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return -1;
  return (*shape)[static_cast<size_t>(dim)];
}

void narrow(Plan& plan, int32_t slot, int64_t lo, int64_t hi, bool is_index) {
  if (slot == kNoSlot || !plan.is_leaf[static_cast<size_t>(slot)] || hi <= lo) return;
  LeafInit& init = plan.leaf_init[slot];
  if (init.hi < init.lo) {
    init.lo = lo;
    init.hi = hi;
  } else {
    init.lo = std::max(init.lo, lo);
    init.hi = std::max(init.lo + 1, std::min(init.hi, hi));
  }
  init.is_index = init.is_index || is_index;
}

int32_t argSlot(const PlanStep& step, int arg) {
  if (arg < 0 || static_cast<size_t>(arg) >= step.args.size()) return kNoSlot;
  const ArgSource& a = step.args[static_cast<size_t>(arg)];
  return a.kind == ArgKind::kTensor ? a.slots[0] : kNoSlot;
}

void applyRule(const trace::Trace& t, const trace::Node& n, const IndexRule& r,
               const PlanStep& step, Plan& plan) {
  if (r.index_list) {
    if (static_cast<size_t>(r.index_arg) >= step.args.size()) return;
    const ArgSource& list = step.args[static_cast<size_t>(r.index_arg)];
    const std::vector<int64_t>* table = shapeOf(t, n, r.table_arg);
    for (size_t d = 0; d < list.slots.size(); ++d) {
      narrow(plan, list.slots[d], 0, sizeAt(table, static_cast<int64_t>(d)), true);
    }
    return;
  }
  int64_t size = -1;
  if (r.bound_arg != kNone) {
    intArg(n, r.bound_arg, &size);
  } else {
    int64_t dim = r.dim;
    if (r.dim_arg != kNone && !intArg(n, r.dim_arg, &dim)) return;
    size = sizeAt(shapeOf(t, n, r.table_arg), dim);
  }
  narrow(plan, argSlot(step, r.index_arg), 0, size, true);
  const int32_t offsets = argSlot(step, r.offsets_arg);
  if (offsets != kNoSlot && plan.is_leaf[static_cast<size_t>(offsets)]) {
    const trace::Value& idx = n.inputs[static_cast<size_t>(r.index_arg)];
    if (idx.kind == trace::ValueKind::kTensor) {
      plan.leaf_init[offsets].offsets_of = static_cast<int64_t>(t.tensors[idx.tensor].numel);
    }
  }
}

// tensor_range: {"<flattened input tensor index>": [min, max], ...}.
void applyTensorRange(const trace::Trace& t, const trace::Node& n,
                      const PlanStep& step, Plan& plan) {
  const trace::Attr* attr = t.attr(n, "tensor_range");
  if (attr == nullptr || attr->value.kind != trace::ValueKind::kString) return;
  const std::string_view text = t.str(attr->value.s);
  if (text.empty()) return;
  const auto ranges = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!ranges.is_object()) {
    ETB_LOG(kWarn) << "node " << n.id << ": unreadable tensor_range ignored";
    return;
  }
  std::vector<int32_t> flat;  // the op's tensor inputs, lists flattened
  for (const ArgSource& a : step.args) {
    if (a.kind != ArgKind::kConst) flat.insert(flat.end(), a.slots.begin(), a.slots.end());
  }
  for (const auto& [key, mm] : ranges.items()) {
    const size_t i = static_cast<size_t>(std::atoll(key.c_str()));
    if (i >= flat.size() || !mm.is_array() || mm.size() != 2) continue;
    if (!mm[0].is_number_integer() || !mm[1].is_number_integer()) continue;
    narrow(plan, flat[i], mm[0].get<int64_t>(), mm[1].get<int64_t>() + 1, false);
  }
}
}  // namespace

void applyIndexRules(const trace::Trace& trace, const trace::Node& node,
                     const PlanStep& step, Plan& plan) {
  applyTensorRange(trace, node, step, plan);
  std::string_view name = step.name;
  if (name == "aten::cross_entropy_loss" || name == "aten::nll_loss" ||
      name == "aten::nll_loss_nd" || name == "aten::nll_loss2d_forward") {
    name = "aten::nll_loss_forward";  // same (self, target, ...) layout
  }
  for (const IndexRule& r : kRules) {
    if (r.op == name) applyRule(trace, node, r, step, plan);
  }
}

}  // namespace etb::replay::detail
