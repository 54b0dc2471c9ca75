// SPDX-License-Identifier: MIT
//
// Buffers an op allocates and frees inside its call that the trace does not
// show. PyTorch 1.13's CPU convolution (float32, the mkldnn path) hands
// plain NCHW tensors to oneDNN, which computes in blocked layouts: each call
// reorders its operands into fresh buffers, computes into a blocked output
// and copies that into the plain tensor the trace records. The weight's copy
// is as large as the weight, so a conv of 512x512x3x3 allocates 9.4 MB the
// trace never names (three times in its backward). Counted on resnet18 with
// an allocation log of et_replay: these buffers are where two thirds of its
// page faults start.
#pragma once

#include <cstddef>
#include <vector>

#include "core/model/trace.h"

namespace etb::predict {

// One action of an op's call, in order: allocate a hidden buffer, free one
// (by the index of its allocation among the hidden ones), allocate the
// node's recorded output `output` (its position among the node's outputs),
// or allocate an object that outlives the call, made on the op's first call
// only (oneDNN's primitive cache).
struct HiddenAction {
  enum Kind { kAlloc, kFree, kOutput, kPersist } kind = kAlloc;
  double bytes = 0;   // kAlloc, kPersist
  size_t index = 0;   // kFree: hidden buffer; kOutput: recorded output
};

// What creating one oneDNN primitive leaves in the primitive cache, counted
// in et_replay's heap (an allocation log of resnet18's first iteration, the
// blocks still live at the third): 862 objects of 541 KB over its 20
// forward convolutions, 951 of 607 KB over its 19 backward calls (two
// primitives each), about 31 objects and 20 KB per primitive. Scattered
// between the iteration's tensors, they keep glibc from trimming the heap
// below them in later iterations.
constexpr int kPrimitiveObjects = 32;
constexpr double kPrimitiveObjectBytes = 640;

// The call's actions for an op with hidden buffers; empty for the others
// (their recorded outputs are all they allocate). `threads`: the intra-op
// threads of the replay (PyTorch's choice of convolution kernel reads it).
std::vector<HiddenAction> hiddenBuffers(const trace::Trace& t, const trace::Node& n, int threads);

}  // namespace etb::predict
