// SPDX-License-Identifier: MIT
#include "replayer/dtype_fallback.h"

#include <ATen/ATen.h>

#include <string_view>

namespace etb::replay::detail {
namespace {
bool isReduced(at::ScalarType st) { return st == at::kHalf || st == at::kBFloat16; }

bool isReducedTensor(const at::Tensor& t) { return t.defined() && isReduced(t.scalar_type()); }

// The schema's own type: the dispatcher's type() of a ScalarType argument
// is int.
bool isScalarTypeArg(const c10::Argument& arg) {
  c10::TypePtr type = arg.real_type();
  if (type->kind() == c10::TypeKind::OptionalType) {
    type = type->castRaw<c10::OptionalType>()->getElementType();
  }
  return type->kind() == c10::TypeKind::ScalarTypeType;
}

// A widened input and the tensor it came from.
struct Widened {
  at::Tensor original;
  at::Tensor wide;
};

class Widener {
 public:
  c10::IValue widen(const c10::IValue& v, const c10::Argument& arg) {
    if (v.isTensor()) return widenTensor(v.toTensor());
    if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      // By index: the list's elements are proxies (a reference to one dangles).
      const c10::List<at::Tensor> in = v.toTensorList();
      for (size_t i = 0; i < in.size(); ++i) out.push_back(widenTensor(in.get(i)));
      return out;
    }
    if (v.isList() && isOptionalTensorList(arg)) {
      c10::List<c10::optional<at::Tensor>> out;
      for (const c10::IValue& x : v.toListRef()) {
        if (x.isTensor()) out.push_back(widenTensor(x.toTensor()));
        else out.push_back(c10::nullopt);
      }
      return out;
    }
    if (v.isInt() && isScalarTypeArg(arg) &&
        isReduced(static_cast<at::ScalarType>(v.toInt()))) {
      return c10::IValue(static_cast<int64_t>(at::kFloat));  // e.g. _softmax_backward_data's
    }
    return v;
  }

  // Mutated inputs get the result back in their dtype; a returned widened
  // input is replaced by the original it stands for.
  void narrowBack(std::vector<c10::IValue>& returns) const {
    for (const Widened& w : widened_) {
      if (w.wide._version() != 0) w.original.copy_(w.wide);
    }
    for (c10::IValue& r : returns) {
      if (!r.isTensor()) continue;
      for (const Widened& w : widened_) {
        if (r.toTensor().is_same(w.wide)) {
          r = w.original;
          break;
        }
      }
    }
  }

 private:
  at::Tensor widenTensor(const at::Tensor& t) {
    if (!isReducedTensor(t)) return t;
    at::Tensor wide = t.to(at::kFloat);
    widened_.push_back({t, wide});
    return wide;
  }

  static bool isOptionalTensorList(const c10::Argument& arg) {
    const c10::TypePtr& type = arg.type();
    if (type->kind() != c10::TypeKind::ListType) return false;
    const c10::TypePtr& elem = type->castRaw<c10::ListType>()->getElementType();
    return elem->kind() == c10::TypeKind::OptionalType;
  }

  std::vector<Widened> widened_;
};

// True when this libtorch's CPU conv_transpose1d in `st` fails or differs
// from float32 on a case a plain convolution cannot get right (1 -> 2
// channels, stride 2).
bool transposedConvBroken(at::ScalarType st) {
  const at::Tensor x = at::arange(4, at::kFloat).reshape({1, 1, 4});
  const at::Tensor w = at::arange(1, 5, at::kFloat).reshape({1, 2, 2});
  const at::Tensor want = at::conv_transpose1d(x, w, {}, 2);
  try {
    const at::Tensor got = at::conv_transpose1d(x.to(st), w.to(st), {}, 2);
    return got.sizes() != want.sizes() || !at::allclose(got.to(at::kFloat), want, 0.05, 0.05);
  } catch (const std::exception&) {
    return true;
  }
}

bool transposedConvBrokenFor(trace::DType dtype) {
  static const bool bf16 = transposedConvBroken(at::kBFloat16);
  static const bool half = transposedConvBroken(at::kHalf);
  return dtype == trace::DType::kBFloat16 ? bf16 : dtype == trace::DType::kHalf && half;
}

// conv_transpose{1,2,3}d, or aten::convolution and its relatives called
// with transposed=true.
bool isTransposedConv(const c10::OperatorHandle& op, const std::vector<ArgSource>& args) {
  const std::string_view name = op.schema().name();
  if (name.rfind("aten::conv_transpose", 0) == 0) return true;
  if (name.rfind("aten::convolution", 0) != 0 && name != "aten::_convolution") return false;
  const auto& schema_args = op.schema().arguments();
  for (size_t i = 0; i < schema_args.size() && i < args.size(); ++i) {
    if (schema_args[i].name() == "transposed") {
      return args[i].kind == ArgKind::kConst && args[i].value.isBool() && args[i].value.toBool();
    }
  }
  return false;
}
}  // namespace

bool hasReducedFloat(const c10::OperatorHandle& op, const std::vector<c10::IValue>& stack) {
  const std::vector<c10::Argument>& args = op.schema().arguments();
  for (size_t i = 0; i < stack.size() && i < args.size(); ++i) {
    if (stack[i].isInt() && isScalarTypeArg(args[i]) &&
        isReduced(static_cast<at::ScalarType>(stack[i].toInt()))) {
      return true;
    }
  }
  for (const c10::IValue& v : stack) {
    if (v.isTensor() && isReducedTensor(v.toTensor())) return true;
    if (v.isList()) {
      for (const c10::IValue& x : v.toListRef()) {
        if (x.isTensor() && isReducedTensor(x.toTensor())) return true;
      }
    }
  }
  return false;
}

void callInFloat32(const c10::OperatorHandle& op, std::vector<c10::IValue>& stack) {
  const std::vector<c10::Argument>& args = op.schema().arguments();
  Widener w;
  for (size_t i = 0; i < stack.size() && i < args.size(); ++i) {
    stack[i] = w.widen(stack[i], args[i]);
  }
  op.callBoxed(stack);
  w.narrowBack(stack);
}

std::string reducedFloatDefect(const trace::Trace& t, const trace::Node& n,
                               const c10::OperatorHandle& op, const std::vector<ArgSource>& args) {
  trace::DType reduced = trace::DType::kUnknown;
  for (const trace::Value& v : n.inputs) {
    if (v.kind != trace::ValueKind::kTensor) continue;
    const trace::DType d = t.tensors[v.tensor].dtype;
    if (d == trace::DType::kBFloat16 || d == trace::DType::kHalf) reduced = d;
  }
  if (reduced == trace::DType::kUnknown || !isTransposedConv(op, args) ||
      !transposedConvBrokenFor(reduced)) {
    return "";
  }
  return "this libtorch's CPU transposed convolution in " + std::string(trace::dtypeName(reduced)) +
         " fails or gives wrong results (probed)";
}

}  // namespace etb::replay::detail
