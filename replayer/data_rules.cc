// SPDX-License-Identifier: MIT
#include "replayer/data_rules.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace etb::replay::detail {
namespace {
using trace::DType;

// Output 0 holds input 0's values, reordered or retyped, all of them.
constexpr std::array<std::string_view, 17> kValuePreserving{{
    "aten::sort", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous",
    "aten::view", "aten::reshape", "aten::_reshape_alias", "aten::flatten", "aten::squeeze",
    "aten::unsqueeze", "aten::detach", "aten::alias", "aten::lift_fresh", "aten::t",
    "aten::transpose", "aten::permute",
}};

constexpr std::array<std::string_view, 15> kDataDependent{{
    "aten::nonzero", "aten::nonzero_numpy", "aten::argwhere", "aten::masked_select",
    "aten::index", "aten::unique", "aten::_unique", "aten::_unique2", "aten::unique_dim",
    "aten::unique_consecutive", "aten::unique_dim_consecutive", "aten::repeat_interleave",
    "aten::bincount", "aten::_pack_padded_sequence", "torchvision::nms",
}};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool wrappable(DType d) {
  return d == DType::kDouble || d == DType::kInt64 || d == DType::kBool;
}

// Dtypes of the op's recorded output tensors (lists flattened).
std::vector<DType> outputDtypes(const trace::Trace& t, const trace::Node& n) {
  std::vector<DType> out;
  for (const trace::Value& v : n.outputs) {
    if (v.kind == trace::ValueKind::kTensor) out.push_back(t.tensors[v.tensor].dtype);
    for (const trace::Value& item : v.items) {
      if (item.kind == trace::ValueKind::kTensor) out.push_back(t.tensors[item.tensor].dtype);
    }
  }
  return out;
}
}  // namespace

bool isWrappedNumber(const trace::Trace& trace, const trace::Node& node,
                     const trace::TensorRef& ref) {
  if (!trace.list(ref.shape).empty() || !wrappable(ref.dtype)) return false;
  const std::vector<DType> outs = outputDtypes(trace, node);
  return std::any_of(outs.begin(), outs.end(),
                     [&](DType d) { return d != DType::kUnknown && d != ref.dtype; });
}

void markWrappedNumbers(const trace::Trace& trace, const trace::Node& node,
                        const PlanStep& step, Plan& plan) {
  for (const ArgSource& a : step.args) {
    if (a.kind != ArgKind::kTensor || a.slots[0] == kNoSlot) continue;
    const int32_t slot = a.slots[0];
    if (!plan.is_leaf[static_cast<size_t>(slot)]) continue;
    if (isWrappedNumber(trace, node, trace.tensors[plan.slot_tensor[static_cast<size_t>(slot)]])) {
      plan.leaf_init[slot].wrapped_number = true;
    }
  }
}

namespace {
// The argument that holds the layer's weight, by op; -1: none.
int weightArgument(std::string_view name) {
  static constexpr std::array<std::string_view, 14> kArg1{{
      "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
      "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
      "aten::mkldnn_convolution", "aten::linear", "aten::mm", "aten::matmul",
      "aten::cudnn_convolution", "aten::_convolution_mode"}};
  if (contains(kArg1, name)) return 1;
  if (name == "aten::addmm") return 2;
  if (name == "aten::lstm" || name == "aten::gru" || name == "aten::rnn_tanh" ||
      name == "aten::rnn_relu") {
    return 2;  // (input, hx, params, ...); the packed overload (data, batch_sizes, hx, params)
  }
  return -1;
}

void initWeight(const trace::Trace& trace, Plan& plan, int32_t slot) {
  const int32_t leaf = valueLeaf(plan, slot);
  if (leaf == kNoSlot) return;
  const trace::TensorRef& ref = trace.tensors[plan.slot_tensor[static_cast<size_t>(leaf)]];
  const std::vector<int64_t>& shape = trace.list(ref.shape);
  const bool floating = ref.dtype == DType::kFloat || ref.dtype == DType::kDouble ||
                        ref.dtype == DType::kHalf || ref.dtype == DType::kBFloat16;
  if (shape.size() < 2 || !floating) return;
  if (const auto it = plan.leaf_init.find(leaf);
      it != plan.leaf_init.end() && (it->second.float_lo != 0 || it->second.float_hi != 1)) {
    return;  // another rule's range
  }
  int64_t fan_in = 1;
  for (size_t d = 1; d < shape.size(); ++d) fan_in *= std::max<int64_t>(shape[d], 1);
  const double b = 1.0 / std::sqrt(static_cast<double>(fan_in));
  plan.leaf_init[leaf].float_lo = -b;
  plan.leaf_init[leaf].float_hi = b;
}
}  // namespace

void initWeights(const trace::Trace& trace, const PlanStep& step, Plan& plan) {
  int arg = weightArgument(step.name);
  if (arg < 0) return;
  // lstm.data / gru.data: (data, batch_sizes, hx, params, ...)
  if (arg == 2 && step.args.size() > 3 && step.args[3].kind == ArgKind::kTensorList) arg = 3;
  if (static_cast<size_t>(arg) >= step.args.size()) return;
  const ArgSource& a = step.args[static_cast<size_t>(arg)];
  if (a.kind == ArgKind::kTensor) initWeight(trace, plan, a.slots[0]);
  if (a.kind == ArgKind::kTensorList && weightArgument(step.name) == 2 && step.name != "aten::addmm") {
    for (const int32_t s : a.slots) initWeight(trace, plan, s);
  }
}

void traceValueSources(const PlanStep& step, Plan& plan) {
  plan.value_source.resize(plan.slots.size(), kNoSlot);
  if (!contains(kValuePreserving, step.name) || step.args.empty()) return;
  const ArgSource& in = step.args[0];
  if (in.kind != ArgKind::kTensor) return;
  const int32_t leaf = valueLeaf(plan, in.slots[0]);
  if (leaf == kNoSlot) return;
  for (const OutBinding& o : step.outs) {
    if (o.ret == 0 && o.item < 0) plan.value_source[static_cast<size_t>(o.slot)] = leaf;
  }
}

int32_t valueLeaf(const Plan& plan, int32_t slot) {
  if (slot == kNoSlot) return kNoSlot;
  const size_t s = static_cast<size_t>(slot);
  if (plan.is_leaf[s]) return slot;
  return s < plan.value_source.size() ? plan.value_source[s] : kNoSlot;
}

bool hasDataDependentShape(std::string_view name) { return contains(kDataDependent, name); }

at::Tensor pinToShape(const at::Tensor& t, const std::vector<int64_t>& shape,
                      const std::vector<int64_t>& strides) {
  if (!t.defined() || t.layout() != at::kStrided || t.sizes() == c10::IntArrayRef(shape) ||
      t.dim() != static_cast<int64_t>(shape.size())) {
    return t;
  }
  at::Tensor out = strides.size() == shape.size() ? at::empty_strided(shape, strides, t.options())
                                                  : at::empty(shape, t.options());
  out.zero_();
  at::Tensor src = t, dst = out;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t n = std::min(t.size(d), shape[static_cast<size_t>(d)]);
    src = src.narrow(d, 0, n);
    dst = dst.narrow(d, 0, n);
  }
  dst.copy_(src);
  return out;
}

int64_t recordedMaskCount(const trace::Trace& trace, const trace::Node& node,
                          std::string_view name) {
  if (name == "aten::masked_scatter" || name == "aten::masked_scatter_") {
    // as many elements set as the source has: what self[mask] = source needs
    if (node.inputs.size() < 3 || node.inputs[1].kind != trace::ValueKind::kTensor ||
        node.inputs[2].kind != trace::ValueKind::kTensor) {
      return -1;
    }
    const DType d = trace.tensors[node.inputs[1].tensor].dtype;
    if (d != DType::kBool && d != DType::kUInt8) return -1;
    return static_cast<int64_t>(trace.tensors[node.inputs[2].tensor].numel);
  }
  if (name == "aten::masked_select_backward") {
    // (grad, input, mask): the gradient has one element per selected one; a
    // mask broadcast against the input is left alone (its count is not k).
    if (node.inputs.size() < 3 || node.inputs[0].kind != trace::ValueKind::kTensor ||
        node.inputs[1].kind != trace::ValueKind::kTensor ||
        node.inputs[2].kind != trace::ValueKind::kTensor) {
      return -1;
    }
    const trace::TensorRef& mask = trace.tensors[node.inputs[2].tensor];
    if ((mask.dtype != DType::kBool && mask.dtype != DType::kUInt8) ||
        trace.list(mask.shape) != trace.list(trace.tensors[node.inputs[1].tensor].shape)) {
      return -1;
    }
    return static_cast<int64_t>(trace.tensors[node.inputs[0].tensor].numel);
  }
  if (name != "aten::index_put_" && name != "aten::_index_put_impl_" &&
      name != "aten::index_put") {
    return -1;
  }
  if (node.inputs.size() < 3 || node.inputs[1].kind != trace::ValueKind::kList) return -1;
  const std::vector<trace::Value>& idx = node.inputs[1].items;
  const trace::Value& self = node.inputs[0];
  const trace::Value& values = node.inputs[2];
  if (idx.size() != 1 || idx[0].kind != trace::ValueKind::kTensor ||
      self.kind != trace::ValueKind::kTensor || values.kind != trace::ValueKind::kTensor) {
    return -1;
  }
  const trace::TensorRef& mask = trace.tensors[idx[0].tensor];
  if (mask.dtype != DType::kBool && mask.dtype != DType::kUInt8) return -1;
  const size_t mask_dims = trace.list(mask.shape).size();
  const size_t self_dims = trace.list(trace.tensors[self.tensor].shape).size();
  const std::vector<int64_t>& v = trace.list(trace.tensors[values.tensor].shape);
  if (mask_dims == 0 || self_dims < mask_dims || v.size() != self_dims - mask_dims + 1) return -1;
  return v[0];
}

uint32_t maskArgument(std::string_view name) {
  return name == "aten::masked_select_backward" ? 2 : 1;
}

at::Tensor maskWithCount(const at::Tensor& mask, int64_t k) {
  if (!mask.defined() || mask.numel() < k) return at::Tensor();
  at::Tensor flat = mask.to(at::kBool).flatten().clone();
  const int64_t set = flat.sum().item<int64_t>();
  if (set > k) {
    at::Tensor on = flat.nonzero().squeeze(1);
    flat.index_fill_(0, on.narrow(0, k, set - k), false);
  } else if (set < k) {
    at::Tensor off = flat.logical_not().nonzero().squeeze(1);
    flat.index_fill_(0, off.narrow(0, 0, k - set), true);
  }
  return flat.view(mask.sizes()).to(mask.scalar_type());
}

namespace {
bool isFloating(DType d) {
  return d == DType::kFloat || d == DType::kDouble || d == DType::kHalf || d == DType::kBFloat16;
}

bool isReduced(DType d) { return d == DType::kHalf || d == DType::kBFloat16; }

// Dtypes of the tensors among `values` (list items included), in order.
std::vector<DType> tensorDtypes(const trace::Trace& t, const std::vector<trace::Value>& values) {
  std::vector<DType> out;
  for (const trace::Value& v : values) {
    if (v.kind == trace::ValueKind::kTensor) out.push_back(t.tensors[v.tensor].dtype);
    for (const trace::Value& item : v.items) {
      if (item.kind == trace::ValueKind::kTensor) out.push_back(t.tensors[item.tensor].dtype);
    }
  }
  return out;
}
}  // namespace

std::vector<DType> autocastInputDtypes(const trace::Trace& trace, const trace::Node& node,
                                      const std::vector<uint32_t>& children) {
  const std::vector<DType> mine = tensorDtypes(trace, node.inputs);
  for (uint32_t c : children) {
    const trace::Node& child = trace.nodes[c];
    if (trace.name(child) != trace.name(node)) continue;
    std::vector<DType> theirs = tensorDtypes(trace, child.inputs);
    for (size_t i = 0; i < mine.size() && i < theirs.size(); ++i) {
      if (mine[i] != theirs[i] && isFloating(mine[i]) && isFloating(theirs[i]) &&
          (isReduced(theirs[i]) || isReduced(mine[i]))) {
        return theirs;
      }
    }
  }
  return {};
}

at::ScalarType autocastDtype(const trace::Trace& trace, const trace::Node& node,
                             const std::vector<uint32_t>& children) {
  const std::vector<DType> theirs = autocastInputDtypes(trace, node, children);
  const std::vector<DType> mine = tensorDtypes(trace, node.inputs);
  for (const std::vector<DType>* side : {&theirs, &mine}) {
    for (size_t i = 0; !theirs.empty() && i < side->size(); ++i) {
      if (isReduced((*side)[i])) return toScalarType((*side)[i]);
    }
  }
  return at::ScalarType::Undefined;
}

std::vector<int64_t> packedLengths(int64_t b, int64_t m, int64_t s) {
  if (b < 1 || m < 1 || s < m + (b - 1) || s > b * m) return {};
  std::vector<int64_t> xs(static_cast<size_t>(b), 1);
  xs[0] = m;
  int64_t rest = s - m - (b - 1);
  for (size_t i = 1; i < xs.size(); ++i) {
    const int64_t add = std::min(m - 1, rest);
    xs[i] += add;
    rest -= add;
  }
  return xs;
}

std::vector<int64_t> packedLengthsOf(const trace::Trace& trace, const trace::Node& node) {
  auto shape = [&](const std::vector<trace::Value>& vs, size_t i) -> const std::vector<int64_t>* {
    if (i >= vs.size() || vs[i].kind != trace::ValueKind::kTensor) return nullptr;
    return &trace.list(trace.tensors[vs[i].tensor].shape);
  };
  const std::vector<int64_t>* in = shape(node.inputs, 0);
  const std::vector<int64_t>* data = shape(node.outputs, 0);
  const std::vector<int64_t>* sizes = shape(node.outputs, 1);
  if (in == nullptr || in->size() < 2 || data == nullptr || data->empty() || sizes == nullptr ||
      sizes->size() != 1) {
    return {};
  }
  const bool batch_first = node.inputs.size() > 2 &&
                           node.inputs[2].kind == trace::ValueKind::kBool && node.inputs[2].b;
  const int64_t steps = (*in)[batch_first ? 1 : 0], batch = (*in)[batch_first ? 0 : 1];
  return packedLengths(batch, std::min((*sizes)[0], steps), (*data)[0]);
}

// libtorch 2.4 took the device type into one set of autocast calls and
// deprecated the per-device ones 1.13 has.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
AutocastScope::AutocastScope(at::ScalarType dtype, at::Device device) {
  if (dtype == at::ScalarType::Undefined) return;
  active_ = true;
  cpu_ = device.is_cpu();
  const at::DeviceType type = cpu_ ? at::kCPU : at::kCUDA;
  was_enabled_ = at::autocast::is_autocast_enabled(type);
  was_dtype_ = at::autocast::get_autocast_dtype(type);
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, true);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  const at::DeviceType type = cpu_ ? at::kCPU : at::kCUDA;
  at::autocast::set_autocast_enabled(type, was_enabled_);
  at::autocast::set_autocast_dtype(type, was_dtype_);
}
#else
AutocastScope::AutocastScope(at::ScalarType dtype, at::Device device) {
  if (dtype == at::ScalarType::Undefined) return;
  active_ = true;
  cpu_ = device.is_cpu();
  if (cpu_) {
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(true);
  }
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (cpu_) {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
  } else {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
  }
}
#endif

bool isSparseRef(const trace::Trace& trace, const trace::TensorRef& ref) {
  const auto& shape = trace.list(ref.shape);
  // (itemsize is 0 as recorded, but et_compose --dtype sets it.)
  return ref.has_device && trace.str(ref.device).empty() && ref.storage_id == 0 &&
         !shape.empty() &&
         std::all_of(shape.begin(), shape.end(), [](int64_t s) { return s > 0; });
}

std::vector<int64_t> packedBatchSizesOf(const trace::Trace& trace, const trace::Node& node) {
  const std::string_view name = trace.name(node);
  auto shape = [&](const trace::Value& v) -> std::vector<int64_t> {
    const bool list = v.kind == trace::ValueKind::kList && !v.items.empty();
    const trace::Value* t = list ? &v.items[0] : &v;
    if (t->kind != trace::ValueKind::kTensor) return {};
    return trace.list(trace.tensors[t->tensor].shape);
  };
  if (node.inputs.size() < 3) return {};
  // _pack_padded_sequence_backward(grad, input_size, batch_sizes, batch_first)
  const bool backward = name == "aten::_pack_padded_sequence_backward";
  const std::vector<int64_t> data = shape(node.inputs[0]);
  const std::vector<int64_t> sizes = shape(node.inputs[backward ? 2 : 1]);
  if (data.empty() || sizes.size() != 1) return {};
  int64_t batch = -1;
  if (backward && node.inputs.size() > 3 && node.inputs[1].items.size() >= 2) {
    const bool batch_first = node.inputs[3].kind == trace::ValueKind::kBool && node.inputs[3].b;
    batch = node.inputs[1].items[batch_first ? 0 : 1].i;
  } else if (name == "aten::gru" || name == "aten::lstm" || name == "aten::rnn_tanh" ||
      name == "aten::rnn_relu") {
    const std::vector<int64_t> hx = shape(node.inputs[2]);
    if (hx.size() == 3) batch = hx[1];
  } else if (name == "aten::_pad_packed_sequence" && !node.outputs.empty()) {
    const std::vector<int64_t> out = shape(node.outputs[0]);
    const bool batch_first = node.inputs[2].kind == trace::ValueKind::kBool && node.inputs[2].b;
    if (out.size() >= 2) batch = out[batch_first ? 0 : 1];
  }
  const std::vector<int64_t> lengths = packedLengths(batch, sizes[0], data[0]);
  std::vector<int64_t> out(lengths.empty() ? 0 : static_cast<size_t>(sizes[0]), 0);
  for (size_t t = 0; t < out.size(); ++t) {
    for (int64_t l : lengths) out[t] += l > static_cast<int64_t>(t) ? 1 : 0;
  }
  return out;
}

at::Tensor makeSparseLeaf(const std::vector<int64_t>& shape, at::ScalarType dtype,
                          at::Device device, at::Generator& gen) {
  const int64_t nnz = std::min<int64_t>(shape[0], 64);
  at::Tensor rows = at::empty({1, nnz}, at::kLong).random_(0, shape[0], gen);
  std::vector<int64_t> vshape{nnz};
  vshape.insert(vshape.end(), shape.begin() + 1, shape.end());
  at::Tensor values = at::empty(vshape, at::TensorOptions().dtype(dtype));
  if (at::isFloatingType(dtype)) values.uniform_(0, 1, gen);
  else values.random_(0, 4, gen);
  return at::sparse_coo_tensor(rows, values, shape).coalesce().to(device);
}

}  // namespace etb::replay::detail
