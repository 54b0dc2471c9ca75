// SPDX-License-Identifier: MIT
//
// Scaling edits on one trace, in place: a dimension substituted wherever it
// appears, and a change of dtype. Recorded times follow (see each
// function), so that a scaled trace can still be simulated.
#pragma once

#include <cstdint>
#include <string>

#include "core/model/trace.h"

namespace etb::compose {

struct ScaleStats {
  uint64_t shapes = 0;       // tensor shapes that held the dimension
  uint64_t int_args = 0;     // Int / Int[] arguments rewritten
  uint64_t comms = 0;        // communication calls resized
  uint64_t timed_nodes = 0;  // durations rescaled
  uint64_t derived = 0;      // outputs whose shape libtorch derives anew (deriveOutputShapes)
  uint64_t repacked = 0;     // flat buffers whose as_strided views were laid out anew
};

// Replaces the size `from` by `to` in every tensor shape (strides, numel and
// storage offsets follow: strides are recomputed for the tensor's dimension
// order, offsets that are multiples of `from` scale), in every Int and Int[]
// argument equal to it (view/reshape/expand sizes, split sizes), and in
// message sizes (element counts of collectives follow their tensors;
// splits that equal `from` are substituted). Durations scale by the ratio
// of the node's FLOPs (matmul-like ops and convolutions) or bytes touched
// (everything else). A flat buffer that as_strided views tile (DDP's
// gradient buckets) is laid out anew: offsets are the running sums of the
// views' new sizes and the buffer their total. Outputs whose sizes libtorch derives from the
// substituted ones take the derived sizes, and their later uses too
// (deriveOutputShapes). Throws InputError when `from` occurs in no shape.
ScaleStats scaleDimension(trace::Trace& t, int64_t from, int64_t to);

struct DtypeStats {
  uint64_t tensors = 0;      // tensor arguments converted
  uint64_t scalar_args = 0;  // ScalarType arguments rewritten
  uint64_t comms = 0;
  uint64_t derived = 0;      // outputs whose dtype libtorch derives otherwise (deriveOutputDtypes)
};

// Converts every tensor of dtype `from` to `to`: dtype, itemsize, the
// recorded type strings ("Tensor(float)" -> "Tensor(c10::BFloat16)"),
// ScalarType arguments (by the op schema), comm dtype and byte counts.
// An output whose dtype libtorch derives otherwise from the converted inputs
// takes libtorch's (abs of a complex tensor is float), and so do its uses.
// Durations of non-matmul ops scale by the byte ratio; matmul-like ops keep
// theirs (same FLOPs; the speed of a dtype is the target's business).
// Throws InputError when no tensor has dtype `from`.
DtypeStats changeDtype(trace::Trace& t, trace::DType from, trace::DType to);

// "bf16", "bfloat16", "fp16", "half", "float16", "fp32", "float32", "float",
// "fp64", "double"... Throws InputError on anything else.
trace::DType parseDtypeFlag(const std::string& text);

}  // namespace etb::compose
