// SPDX-License-Identifier: MIT
//
// The float32 fallback for functional replays of GPU traces on CPU: this
// libtorch has no CPU kernel for many Half/BFloat16 ops (addmm, baddbmm,
// layer norm backward...). Such an op is computed in float32 and its results
// are cast back to the recorded dtypes by the caller, so the ops after it see
// what they saw in the original. Timings of such ops are not the original's
// and the coverage lists every one.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <vector>

namespace etb::replay::detail {

// True when the boxed arguments hold a defined Half or BFloat16 tensor.
bool hasReducedFloat(const std::vector<c10::IValue>& stack);

// Calls `op` on `stack` (its arguments) with every Half/BFloat16 tensor and
// ScalarType argument widened to float32. Inputs the op mutated get the
// result written back in their own dtype, and a returned alias of one of them
// is that input again; other returns stay float32. Throws what the op throws.
void callInFloat32(const c10::OperatorHandle& op, std::vector<c10::IValue>& stack);

}  // namespace etb::replay::detail
