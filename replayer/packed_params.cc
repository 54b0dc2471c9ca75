// SPDX-License-Identifier: MIT
#include "replayer/packed_params.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <vector>

namespace etb::replay::detail {
namespace {

// The last dimension of the node's first tensor among `values`; -1 if none.
int64_t lastDim(const trace::Trace& trace, const std::vector<trace::Value>& values) {
  for (const trace::Value& v : values) {
    if (v.kind != trace::ValueKind::kTensor) continue;
    const std::vector<int64_t>& shape = trace.list(trace.tensors[v.tensor].shape);
    return shape.empty() ? -1 : shape.back();
  }
  return -1;
}

}  // namespace

bool isPackedLinearParams(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::ClassType &&
         type->str() == "__torch__.torch.classes.quantized.LinearPackedParamsBase";
}

bool makePackedLinearParams(const trace::Trace& trace, const trace::Node& node,
                            std::string_view name, c10::IValue* out, std::string* why) {
  const int64_t in = lastDim(trace, node.inputs), features = lastDim(trace, node.outputs);
  if (in <= 0 || features <= 0) {
    *why = "packed weights (opaque <Object>) whose size the recorded input/output do not show";
    return false;
  }
  const bool fp16 = name.find("fp16") != std::string_view::npos;
  const char* prepack = fp16 ? "quantized::linear_prepack_fp16" : "quantized::linear_prepack";
  const auto op = c10::Dispatcher::singleton().findSchema({prepack, ""});
  if (!op) {
    *why = std::string("packed weights (opaque <Object>): no ") + prepack + " in this libtorch";
    return false;
  }
  at::Tensor w = at::randn({features, in}) * 0.05;
  if (!fp16) w = at::quantize_per_tensor(w, 0.05 * 4 / 127.0, 0, at::kQInt8);
  std::vector<c10::IValue> stack{w, at::zeros({features})};
  try {
    op->callBoxed(&stack);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    *why = std::string(prepack) + " failed: " + what.substr(0, what.find('\n'));
    return false;
  }
  *out = std::move(stack.at(0));
  return true;
}

}  // namespace etb::replay::detail
