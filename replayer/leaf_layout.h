// SPDX-License-Identifier: MIT
//
// Leaf layouts the recording implies but does not state. Traces before
// schema 1.1.1 carry no strides, so a leaf (a tensor no replayed op
// produces) would be allocated contiguous. Many leaves are views made by a
// child of a replayed op: aten::linear and aten::lstm save weight.t() for
// their backward, whose own aten::t turns it back into the contiguous
// weight. Allocated contiguous, that saved tensor made every backward GEMM
// take a transposed operand, another BLAS path (2.5x slower for a
// [16,1024] x [1024,256] mm). The producing view op is in the trace, so the
// layout is derived from it: by et_replay when it allocates leaves, and by
// et_generate, which writes the derived strides into the generated trace
// (its programs hold only the replayed nodes, not the children).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "core/model/trace.h"
#include "replayer/op_selection.h"

namespace etb::replay {

class ViewLayouts {
 public:
  // A tensor's identity without strides (the traces this serves have none).
  using Identity = std::tuple<uint64_t, uint64_t, uint64_t, trace::ListId, trace::DType>;

  // Derives strides for the tensors without recorded strides that no node
  // of `selected` produces and that a recorded transposing view op (aten::t,
  // transpose, permute, swapaxes, swapdims) made from a tensor of known
  // layout (such a tensor itself, recorded strides, or contiguous).
  ViewLayouts(const trace::Trace& trace, const std::vector<SelectedNode>& selected);

  // The derived strides of `ref`, or null when it keeps its default.
  const std::vector<int64_t>* find(const trace::TensorRef& ref) const;
  size_t size() const { return strides_.size(); }

 private:
  std::map<Identity, std::vector<int64_t>> strides_;
};

}  // namespace etb::replay
