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

#include <string>
#include <vector>

#include "replayer/op_plan.h"

namespace etb::replay::detail {

// True when the boxed arguments of `op` hold a defined Half or BFloat16
// tensor, or ask for one by a ScalarType argument (eye, zeros, arange).
bool hasReducedFloat(const c10::OperatorHandle& op, const std::vector<c10::IValue>& stack);

// Calls `op` on `stack` (its arguments) with every Half/BFloat16 tensor and
// ScalarType argument widened to float32. Inputs the op mutated get the
// result written back in their own dtype, and a returned alias of one of them
// is that input again; other returns stay float32. Throws what the op throws.
void callInFloat32(const c10::OperatorHandle& op, std::vector<c10::IValue>& stack);

// Why node `n` must run in float32 on CPU although a kernel for its recorded
// Half/BFloat16 tensors exists ("" when it need not): libtorch 1.13's CPU
// transposed convolution in BFloat16 computes a plain convolution, so it
// returns a wrong shape (a shape error only at a later op), fails, or, where
// the shapes coincide, other values in another kernel's time. Whether this
// libtorch has the defect is probed once per dtype on a tiny input.
// `args` are the op's decoded arguments (the `transposed` flag of
// aten::convolution and its relatives).
std::string reducedFloatDefect(const trace::Trace& t, const trace::Node& n,
                               const c10::OperatorHandle& op, const std::vector<ArgSource>& args);

}  // namespace etb::replay::detail
