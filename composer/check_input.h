// SPDX-License-Identifier: MIT
//
// The inputs of one shape-check run (composer/shape_check.cc): tensors of the
// recorded shapes, with what the trace does not record about values made up
// as the replay makes it up (replayer/data_rules.h).
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "core/model/trace.h"

namespace etb::compose {

struct CheckRun {
  at::Device device = at::kMeta;
  bool standin = false;  // half/bfloat16 as float32 (CPU kernels lacking them)
  const std::vector<trace::DType>* autocast = nullptr;  // the kernel's dtypes, or empty
  at::Generator* gen = nullptr;                         // sparse inputs' rows
};

// Input k of `n`'s check run; slot_tensor[k] is its TensorRef index.
at::Tensor makeCheckInput(const trace::Trace& t, const trace::Node& n,
                          const std::vector<uint32_t>& slot_tensor, size_t k, const CheckRun& run);

}  // namespace etb::compose
