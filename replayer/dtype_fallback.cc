// SPDX-License-Identifier: MIT
#include "replayer/dtype_fallback.h"

#include <ATen/ATen.h>

namespace etb::replay::detail {
namespace {
bool isReduced(at::ScalarType st) { return st == at::kHalf || st == at::kBFloat16; }

bool isReducedTensor(const at::Tensor& t) { return t.defined() && isReduced(t.scalar_type()); }

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
      for (const at::Tensor& t : v.toTensorList()) out.push_back(widenTensor(t));
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

  static bool isScalarTypeArg(const c10::Argument& arg) {
    c10::TypePtr type = arg.type();
    if (type->kind() == c10::TypeKind::OptionalType) {
      type = type->castRaw<c10::OptionalType>()->getElementType();
    }
    return type->kind() == c10::TypeKind::ScalarTypeType;
  }

  std::vector<Widened> widened_;
};
}  // namespace

bool hasReducedFloat(const std::vector<c10::IValue>& stack) {
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

}  // namespace etb::replay::detail
