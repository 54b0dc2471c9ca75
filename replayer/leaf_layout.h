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

// Where the recording reused an address. A recorded storage id names the
// storage's address, and the allocator hands a freed address to the next
// allocation: one id can stand for several storages in turn (a batch norm's
// save_mean, later a gradient). One buffer for all of them let a replayed
// op's output land in another op's leaf: resnet18's backward read a
// save_mean of 1e33, and every iteration after the first replayed on NaN
// (its max_pool2d then ran in half the time it takes on finite values).
// Walking the trace in order, an op's output on a storage that none of the
// op's inputs holds starts a new generation of that storage; a view or an
// in-place result (an input on the same storage) stays in its input's; a
// tensor first seen as an input belongs to its storage's current one where
// that one was there before the recording, else starts a new one.
class StorageGenerations {
 public:
  explicit StorageGenerations(const trace::Trace& trace);

  // The buffer `ref` (an element of the trace's tensors) lives in: its
  // recorded storage id in the storage's first generation, an id above
  // every recorded one in later generations; 0 (none recorded) stays 0.
  uint64_t bufferOf(const trace::Trace& trace, const trace::TensorRef& ref) const {
    return buffer_[static_cast<size_t>(&ref - trace.tensors.data())];
  }
  // Recorded storages that stood for more than one allocation.
  size_t reusedStorages() const { return reused_; }

 private:
  std::vector<uint64_t> buffer_;  // by index in Trace::tensors
  size_t reused_ = 0;
};

}  // namespace etb::replay
