// SPDX-License-Identifier: MIT
#include "replayer/cpu_rewrites.h"

namespace etb::replay::detail {
namespace {
trace::Value boolValue(bool b) {
  trace::Value v;
  v.kind = trace::ValueKind::kBool;
  v.b = b;
  return v;
}

const trace::Value& at(const std::vector<trace::Value>& xs, size_t i) {
  static const trace::Value kNoneValue;
  return i < xs.size() ? xs[i] : kNoneValue;
}
}  // namespace

bool rewriteForCpu(std::string* name, std::string* overload,
                   const std::vector<trace::Value>& in, std::vector<trace::Value>* out) {
  if (*name == "aten::cudnn_batch_norm_backward") {
    // cudnn(input, grad_output, weight, running_mean, running_var, save_mean,
    // save_var (= inverse std), epsilon, reserveSpace) -> native(grad_out,
    // input, weight, running_mean, running_var, save_mean, save_invstd,
    // train, eps, output_mask)
    trace::Value mask;
    mask.kind = trace::ValueKind::kList;
    mask.items.assign(3, boolValue(true));
    *out = {at(in, 1), at(in, 0), at(in, 2), at(in, 3), at(in, 4),
            at(in, 5), at(in, 6), boolValue(true), at(in, 7), mask};
    *name = "aten::native_batch_norm_backward";
    overload->clear();
    return true;
  }
  if (*name == "aten::pin_memory" || *name == "aten::_pin_memory") {
    *out = {at(in, 0)};  // a copy in ordinary host memory
    *name = "aten::clone";
    overload->clear();
    return true;
  }
  return false;
}

bool deviceDependentOutput(std::string_view op, size_t ret) {
  // embedding_bag's offset2bag, bag_size and max_indices: CUDA fills
  // offset2bag per index and leaves max_indices empty in sum mode, the CPU
  // fast path leaves offset2bag empty and sizes max_indices by bag.
  if (op == "aten::embedding_bag" || op == "aten::_embedding_bag" ||
      op == "aten::_embedding_bag_forward_only") {
    return ret >= 1 && ret <= 3;
  }
  return false;
}

}  // namespace etb::replay::detail
