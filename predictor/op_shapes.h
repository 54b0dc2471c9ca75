// SPDX-License-Identifier: MIT
//
// The shape facts the op models read from a recorded node: its tensors
// (flattened out of lists), their bytes, and the derived GEMM / convolution
// / embedding dimensions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/trace.h"
#include "predictor/hw_profile.h"

namespace etb::predict {

struct TensorFacts {
  std::vector<int64_t> shape;
  double bytes = 0;
  double numel = 0;
  uint64_t tensor_id = 0, storage_id = 0;
  size_t arg = 0;  // index of the node input (or output) it came from
  trace::DType dtype = trace::DType::kUnknown;
  // A 4-D tensor in NHWC order: set by OpModel::estimate from the layouts
  // layout_model.h reads (recorded strides) or carries through the trace.
  bool channels_last = false;
  // A 2-D tensor stored column by column (W.t()): set by OpModel::estimate
  // from layout_model.h's transposedInputs.
  bool transposed = false;
};

struct OpShapes {
  std::vector<TensorFacts> in, out;
  std::vector<const trace::Value*> args;  // every input value, in order
  std::vector<std::vector<TensorFacts>> in_lists;  // tensor-list inputs

  double inputBytes() const;
  double bytes() const;  // inputs + outputs
  int tensorInputs() const { return static_cast<int>(in.size()); }
  bool outputSameAsInput() const;
  // The tensor that input argument `arg` holds; nullptr when not a tensor.
  const TensorFacts* inputArg(size_t arg) const;
  // The type a kernel computes in: that of its first output with a recorded
  // type, else of its first such input (under autocast a linear's inputs mix
  // float32 weights with a bfloat16 activation; its output is in the type it
  // ran in).
  trace::DType computeDType() const;
};

OpShapes opShapes(const trace::Trace& trace, const trace::Node& node);

struct GemmDims {
  bool valid = false;
  double b = 1, m = 0, n = 0, k = 0;
  // B reaches the BLAS transposed: linear's [N, K] weight, or a 2-D B
  // stored column by column (TensorFacts::transposed).
  bool b_transposed = false;
};
// (b, m, n, k) of mm/addmm/bmm/baddbmm/matmul/linear/mv from the operands.
GemmDims gemmDims(const std::string& op, const OpShapes& shapes);

// A convolution as the implicit GEMM it runs: m = N*OH*OW, n = OC,
// k = C/groups*KH*KW (flops() = 2*m*n*k).
struct ConvShape {
  bool valid = false;
  double m = 0, n = 0, k = 0;
  double batch = 1;   // m = batch * output pixels
  double stride = 1;  // a strided convolution runs below a dense one's rate
  // Grouped (depthwise: one group per channel) convolutions run far below a
  // dense one's rate at the same FLOPs (k is then kh x kw per group).
  double groups = 1;
  double window = 1;  // kh x kw
  // A transposed convolution (the transposed flag of convolution /
  // convolution_backward): its weight is [in, out / groups, kh, kw], and the
  // forward grid's classes and fixed costs do not describe its kernels.
  bool transposed = false;
  double flops() const { return 2 * m * n * k; }
};
// A reduction as [outer, reduced, inner] over its input's contiguous
// layout: inner > 1 keeps a contiguous run per output (a sum over the
// batch: each output gathers a strided column); inner == 1 with outer > 1
// reduces rows of `reduced`; both 1: one stream to one value. `bytes`: the
// input's (an out= tensor or the dims list are not read).
struct ReduceShape {
  bool valid = false;
  double outer = 1, reduced = 1, inner = 1;
  double bytes = 0;
};
// From sum / mean / amax ... (self, dim, ...): dims from input 1 (a list,
// empty = all, or one int when the output has more than one element).
ReduceShape reduceShapeOf(const OpShapes& shapes);

ConvShape convShapeOf(const ConvPoint& point);
// From a recorded convolution (input, weight, output) or
// convolution_backward (grad_output, input, weight).
ConvShape convShapeOf(const OpShapes& shapes, bool backward);

}  // namespace etb::predict
