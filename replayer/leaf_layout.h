// SPDX-License-Identifier: MIT
//
// Leaf layouts the recording implies but does not state. Traces before
// schema 1.1.1 carry no strides, so a leaf (a tensor no replayed op
// produces) would be allocated contiguous. Many leaves are views made by a
// child of a replayed op: aten::linear saves weight.t() for its backward,
// and the backward's own aten::t turns it back into the contiguous weight.
// Allocated contiguous, that saved tensor becomes a transposed operand of
// every backward GEMM, which BLAS runs on another path (2.5x slower for a
// [16,1024] x [1024,256] mm). The producing view op is in the trace, so its
// layout is derived from it here.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/model/trace.h"
#include "replayer/op_plan.h"

namespace etb::replay::detail {

// Strides per leaf slot, for leaves without recorded strides that a
// recorded transposing view op (aten::t, transpose, permute, swapaxes,
// swapdims) produced from a tensor of known layout (itself such a leaf,
// recorded strides, or contiguous). Slots not in the map keep the default.
std::unordered_map<int32_t, std::vector<int64_t>> deriveLeafStrides(const trace::Trace& trace,
                                                                   const Plan& plan);

}  // namespace etb::replay::detail
