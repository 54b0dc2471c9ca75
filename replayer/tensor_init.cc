// SPDX-License-Identifier: MIT
// allocateLeaves(): one buffer per recorded storage (per allocation where
// the recording reused its address), leaf tensors as views of it (so
// aliasing is as recorded), data drawn once before iteration 1.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>

#include "core/base/log.h"
#include "replayer/data_rules.h"
#include "replayer/op_plan.h"
#include "replayer/zipf.h"

namespace etb::replay::detail {
namespace {

int64_t elementSize(const trace::TensorRef& r) {
  const int s = trace::itemBytes(r);
  return s > 0 ? s : 4;
}

// Elements of the storage a view reaches: offset + sum((size-1)*stride) + 1.
int64_t extentElems(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                    int64_t offset) {
  int64_t span = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return offset;
    span += (shape[i] - 1) * std::abs(strides[i]);
  }
  return offset + span;
}

// Offsets of embedding_bag: start at 0, never decrease, end at <= numel of
// the indices (the last bag may be empty, which both offset modes accept).
at::Tensor makeOffsets(int64_t count, int64_t indices, std::mt19937_64& rng) {
  std::vector<int64_t> xs(static_cast<size_t>(count));
  std::uniform_int_distribution<int64_t> d(0, std::max<int64_t>(indices, 0));
  for (auto& x : xs) x = d(rng);
  std::sort(xs.begin(), xs.end());
  if (!xs.empty()) xs.front() = 0;
  if (xs.size() > 1) xs.back() = indices;
  return at::tensor(xs, at::kLong);
}

class LeafInitializer {
 public:
  LeafInitializer(const PlanOptions& o) : o_(o), rng_(o.seed),
      gen_(at::make_generator<at::CPUGeneratorImpl>(o.seed)) {}

  at::Generator& generator() { return gen_; }

  void fill(at::Tensor& view, const LeafInit* init) {
    if (view.numel() == 0) return;
    at::Tensor host = view.device().is_cpu() ? view : at::empty(view.sizes(), view.options().device(at::kCPU));
    fillHost(host, init);
    if (!view.device().is_cpu()) view.copy_(host);
  }

  // The same draw of a floating-point leaf, made where it lives: off the
  // host, a draw on the host and a copy would run each iteration's refill
  // through the host's caches (tens of MB) and leave the launches after it
  // cold. Measured on an H200 with --state reset drawing on the host: mlp's
  // iteration took 1.29 ms against 0.82 ms with --state carry, its first
  // linear 210 us against 42. Other leaves (integers: index rules) take the
  // host's draw. The device's generator is a clone of its default one,
  // seeded as the host's, so every iteration draws the same values.
  void refill(at::Tensor& view, const LeafInit* init) {
    if (view.numel() == 0) return;
    if (view.device().is_cpu() || !at::isFloatingType(view.scalar_type())) return fill(view, init);
    if (!device_gen_.defined()) {
      device_gen_ = at::globalContext().defaultGenerator(view.device()).clone();
      const std::lock_guard<std::mutex> lock(device_gen_.mutex());
      device_gen_.set_current_seed(o_.seed);
    }
    view.uniform_(init != nullptr ? init->float_lo : 0.0, init != nullptr ? init->float_hi : 1.0, device_gen_);
  }

 private:
  void fillHost(at::Tensor& t, const LeafInit* init) {
    const at::ScalarType st = t.scalar_type();
    if (at::isFloatingType(st)) {
      t.uniform_(init != nullptr ? init->float_lo : 0.0, init != nullptr ? init->float_hi : 1.0, gen_);
    } else if (at::isComplexType(st)) {
      t.zero_();
    } else if (st == at::kBool) {
      t.random_(0, 2, gen_);
    } else if (init != nullptr && static_cast<int64_t>(init->values.size()) == t.numel()) {
      t.copy_(at::tensor(init->values, at::kLong).view(t.sizes()));
    } else if (init != nullptr && init->offsets_of >= 0) {
      t.copy_(makeOffsets(t.numel(), init->offsets_of, rng_).view(t.sizes()));
    } else if (init != nullptr && init->hi > init->lo) {
      if (init->is_index && o_.zipf_alpha > 0 && init->lo == 0) {
        t.copy_(at::tensor(zipfSamples(init->hi, o_.zipf_alpha, t.numel(), rng_), at::kLong)
                    .view(t.sizes()));
      } else {
        t.random_(init->lo, init->hi, gen_);
      }
    } else {
      t.random_(0, 4, gen_);  // small, non-negative: safe as sizes or ids
    }
  }

  const PlanOptions& o_;
  std::mt19937_64 rng_;
  at::Generator gen_;
  at::Generator device_gen_;
};
}  // namespace

std::vector<int64_t> recordedStrides(const trace::Trace& trace, const trace::TensorRef& ref) {
  const auto& shape = trace.list(ref.shape);
  if (ref.has_strides && trace.list(ref.strides).size() == shape.size()) {
    return trace.list(ref.strides);
  }
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

at::ScalarType toScalarType(trace::DType d) {
  switch (d) {
    case trace::DType::kDouble: return at::kDouble;
    case trace::DType::kHalf: return at::kHalf;
    case trace::DType::kBFloat16: return at::kBFloat16;
    case trace::DType::kInt64: return at::kLong;
    case trace::DType::kInt32: return at::kInt;
    case trace::DType::kInt16: return at::kShort;
    case trace::DType::kInt8: return at::kChar;
    case trace::DType::kUInt8: return at::kByte;
    case trace::DType::kBool: return at::kBool;
    case trace::DType::kComplexFloat: return at::kComplexFloat;
    case trace::DType::kComplexDouble: return at::kComplexDouble;
    default: return at::kFloat;
  }
}

void refillLeaves(Plan& plan, const PlanOptions& options, const std::vector<int32_t>& slots) {
  LeafInitializer init(options);
  const at::NoGradGuard no_grad;  // parameters that record autograd
  for (int pass = 0; pass < 2; ++pass) {
    for (const int32_t s : slots) {
      at::Tensor& t = plan.slots[static_cast<size_t>(s)];
      if (!t.defined() || t.layout() != at::kStrided) continue;
      if (at::isIntegralType(t.scalar_type(), /*includeBool=*/true) != (pass == 1)) continue;
      const auto it = plan.leaf_init.find(s);
      init.refill(t, it == plan.leaf_init.end() ? nullptr : &it->second);
    }
  }
}

LeafDevices::LeafDevices(const trace::Trace& trace, const at::Device& replay)
    : trace_(trace), replay_(replay) {
  if (replay.is_cpu()) return;
  for (const trace::TensorRef& r : trace.tensors) {
    if (r.has_device && trace.str(r.device).rfind("cuda", 0) == 0) {
      gpu_trace_ = true;
      break;
    }
  }
}

at::Device LeafDevices::of(trace::StrId recorded) const {
  return gpu_trace_ && trace_.str(recorded) == "cpu" ? at::Device(at::kCPU) : replay_;
}

void allocateLeaves(const trace::Trace& trace, Plan& plan, const PlanOptions& options,
                    const ViewLayouts& layouts) {
  const LeafDevices devices(trace, options.device);
  // Each leaf's strides, once: recorded, derived from the view op that made
  // it, or row-major.
  std::vector<std::vector<int64_t>> strides(plan.slots.size());
  for (size_t s = 0; s < plan.slots.size(); ++s) {
    if (!plan.is_leaf[s]) continue;
    const trace::TensorRef& r = trace.tensors[plan.slot_tensor[s]];
    if (const std::vector<int64_t>* derived = layouts.find(r)) {
      strides[s] = *derived;
      ++plan.leaf_layouts_derived;
    } else {
      strides[s] = recordedStrides(trace, r);
    }
  }
  // Bytes per (buffer, device); storage 0 means "no storage recorded".
  const StorageGenerations generations(trace);
  if (generations.reusedStorages() > 0) {
    ETB_LOG(kDebug) << generations.reusedStorages() << " recorded storage ids stood for "
                    << "several allocations in turn: each allocation's leaves get their own buffer";
  }
  std::map<std::pair<uint64_t, trace::StrId>, int64_t> bytes;
  for (size_t s = 0; s < plan.slots.size(); ++s) {
    if (!plan.is_leaf[s]) continue;
    const trace::TensorRef& r = trace.tensors[plan.slot_tensor[s]];
    if (r.storage_id == 0) continue;
    const int64_t need = extentElems(trace.list(r.shape), strides[s],
                                     static_cast<int64_t>(r.offset)) * elementSize(r);
    auto& b = bytes[{generations.bufferOf(trace, r), r.device}];
    b = std::max(b, need);
  }
  std::map<std::pair<uint64_t, trace::StrId>, at::Tensor> buffers;
  for (const auto& [key, n] : bytes) {
    buffers[key] = at::empty({n}, at::TensorOptions().dtype(at::kByte).device(devices.of(key.second)));
    plan.leaf_bytes += static_cast<uint64_t>(n);
  }
  LeafInitializer init(options);
  // Integers last: where a storage is shared, the index rules must win.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t s = 0; s < plan.slots.size(); ++s) {
      if (!plan.is_leaf[s]) continue;
      const trace::TensorRef& r = trace.tensors[plan.slot_tensor[s]];
      const at::ScalarType st = toScalarType(r.dtype);
      const bool integral = at::isIntegralType(st, /*includeBool=*/true);
      if (integral != (pass == 1)) continue;
      const auto& shape = trace.list(r.shape);
      const at::Device device = devices.of(r.device);
      const auto opts = at::TensorOptions().dtype(st).device(device);
      at::Tensor t;
      auto buf = buffers.find({generations.bufferOf(trace, r), r.device});
      if (isSparseRef(trace, r)) {
        plan.slots[s] = makeSparseLeaf(shape, st, device, init.generator());
        continue;
      }
      if (buf != buffers.end()) {
        t = at::empty({0}, opts).set_(buf->second.storage(), static_cast<int64_t>(r.offset),
                                      shape, strides[s]);
      } else {
        t = at::empty_strided(shape, strides[s], opts);
        plan.leaf_bytes += static_cast<uint64_t>(t.nbytes());
      }
      if (!t.is_contiguous()) ++plan.coverage.strided_leaves;
      auto it = plan.leaf_init.find(static_cast<int32_t>(s));
      init.fill(t, it == plan.leaf_init.end() ? nullptr : &it->second);
      if (it != plan.leaf_init.end() && it->second.wrapped_number && t.dim() == 0 &&
          t.device().is_cpu()) {
        t.unsafeGetTensorImpl()->set_wrapped_number(true);
      }
      plan.slots[s] = std::move(t);
    }
  }
}

}  // namespace etb::replay::detail
