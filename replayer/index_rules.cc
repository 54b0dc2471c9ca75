// SPDX-License-Identifier: MIT
#include "replayer/index_rules.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string_view>

#include "core/base/log.h"
#include "replayer/data_rules.h"

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
constexpr std::array<IndexRule, 24> kRules{{
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
    {"aten::scatter_reduce", 2, 0, kNone, 1, kNone, kNone, false},
    {"aten::scatter_reduce_", 2, 0, kNone, 1, kNone, kNone, false},
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

// Narrows the leaf whose values reach `slot` (itself, or the leaf a sort,
// view or cast took them from).
void narrow(Plan& plan, int32_t slot, int64_t lo, int64_t hi, bool is_index) {
  slot = valueLeaf(plan, slot);
  if (slot == kNoSlot || hi <= lo) return;
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

// Floating leaves are drawn from [lo, hi) instead of [0, 1).
void setFloatRange(Plan& plan, int32_t slot, double lo, double hi) {
  slot = valueLeaf(plan, slot);
  if (slot == kNoSlot) return;
  plan.leaf_init[slot].float_lo = lo;
  plan.leaf_init[slot].float_hi = hi;
}

// The size index_arg's values must stay below; -1 when unknown.
int64_t ruleSize(const trace::Trace& t, const trace::Node& n, const IndexRule& r) {
  int64_t size = -1;
  if (r.bound_arg != kNone) {
    intArg(n, r.bound_arg, &size);
    return size;
  }
  int64_t dim = r.dim;
  if (r.dim_arg != kNone && !intArg(n, r.dim_arg, &dim)) return -1;
  return sizeAt(shapeOf(t, n, r.table_arg), dim);
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
  narrow(plan, argSlot(step, r.index_arg), 0, ruleSize(t, n, r), true);
  const int32_t offsets = argSlot(step, r.offsets_arg);
  if (offsets != kNoSlot && plan.is_leaf[static_cast<size_t>(offsets)]) {
    const trace::Value& idx = n.inputs[static_cast<size_t>(r.index_arg)];
    if (idx.kind == trace::ValueKind::kTensor) {
      plan.leaf_init[offsets].offsets_of = static_cast<int64_t>(t.tensors[idx.tensor].numel);
    }
  }
}

// _pack_padded_sequence(input, lengths, batch_first): lengths in [1, T],
// sorted descending (the op checks both), drawn so the packed data and
// batch_sizes have their recorded sizes.
void applyPackedLengths(const trace::Trace& t, const trace::Node& n, const PlanStep& step,
                        Plan& plan) {
  const int32_t leaf = valueLeaf(plan, argSlot(step, 1));
  const std::vector<int64_t>* in = shapeOf(t, n, 0);
  if (leaf == kNoSlot || in == nullptr || in->size() < 2) return;
  const bool batch_first = n.inputs.size() > 2 && n.inputs[2].kind == trace::ValueKind::kBool &&
                           n.inputs[2].b;
  narrow(plan, leaf, 1, (*in)[batch_first ? 1 : 0] + 1, false);
  std::vector<int64_t> lengths = packedLengthsOf(t, n);
  const trace::TensorRef& r = t.tensors[plan.slot_tensor[static_cast<size_t>(leaf)]];
  if (r.numel == lengths.size()) plan.leaf_init[leaf].values = std::move(lengths);
}

// LU pivots (linalg_lu_solve, lu_solve, lu_unpack; a linalg.solve's
// backward reads its forward's) are 1-based row numbers: the kernels check
// that each lies in [1, n] for an LU of n rows.
void applyPivots(const trace::Trace& t, const trace::Node& n, const PlanStep& step, Plan& plan) {
  const std::vector<c10::Argument>& args = step.op->schema().arguments();
  int lu = kNone, pivots = kNone;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name() == "LU" || args[i].name() == "LU_data") lu = static_cast<int>(i);
    if (args[i].name() == "pivots" || args[i].name() == "LU_pivots") pivots = static_cast<int>(i);
  }
  if (lu == kNone || pivots == kNone) return;
  const int64_t rows = sizeAt(shapeOf(t, n, lu), -2);
  if (rows > 0) narrow(plan, argSlot(step, pivots), 1, rows + 1, false);
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
  if (name == "aten::_pack_padded_sequence") applyPackedLengths(trace, node, step, plan);
  if (step.op) applyPivots(trace, node, step, plan);
  if (name == "aten::fused_moving_avg_obs_fake_quant" ||
      name == "aten::_fused_moving_avg_obs_fq_helper") {
    // running_min <= running_max, or choosing quantization parameters faults
    setFloatRange(plan, argSlot(step, 3), -1.0, 0.0);
    setFloatRange(plan, argSlot(step, 4), 0.0, 1.0);
  }
}

std::vector<std::pair<uint32_t, int64_t>> indexBounds(const trace::Trace& trace,
                                                      const trace::Node& node,
                                                      const PlanStep& step) {
  std::vector<std::pair<uint32_t, int64_t>> out;
  for (const IndexRule& r : kRules) {
    if (r.op != step.name || r.index_list || argSlot(step, r.index_arg) == kNoSlot) continue;
    const int64_t size = ruleSize(trace, node, r);
    if (size > 0) out.emplace_back(static_cast<uint32_t>(r.index_arg), size);
  }
  return out;
}

}  // namespace etb::replay::detail
