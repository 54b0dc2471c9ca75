// SPDX-License-Identifier: MIT
//
// Size measures of one node, used to scale recorded durations when shapes
// or dtypes change, and to resize communication calls.
#pragma once

#include <cstdint>

#include "core/model/trace.h"

namespace etb::compose {

// FLOPs for matmul-like ops (mm, addmm, bmm, baddbmm, matmul, linear:
// output elements x reduced dimension) and convolutions (output elements x
// weight elements per output channel); bytes read and written for
// everything else. 0 for a node without tensors.
double nodeWork(const trace::Trace& t, const trace::Node& n);

// True for the ops nodeWork() counts in FLOPs.
bool isMatmulLike(const trace::Trace& t, const trace::Node& n);

// Elements in the tensors of a node's inputs and outputs (lists included).
struct CallSizes {
  uint64_t in_elems = 0;
  uint64_t out_elems = 0;
};
CallSizes callSizes(const trace::Trace& t, const trace::Node& n);

// Bytes of the tensors in `values` (lists included).
uint64_t valueBytes(const trace::Trace& t, const std::vector<trace::Value>& values);

}  // namespace etb::compose
