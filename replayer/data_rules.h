// SPDX-License-Identifier: MIT
//
// What an execution trace does not record about values, and how the replay
// makes up for it so that every op sees what it saw in the original: Python
// numbers wrapped into 0-dim tensors, leaves whose values only pass through
// value-preserving ops before an op constrains them, sparse tensors (no
// storage recorded), ops whose output shapes depend on input values, and
// ops that ran under autocast (a thread state the arguments do not show).
#pragma once

#include <ATen/ATen.h>

#include <string_view>
#include <vector>

#include "core/model/trace.h"
#include "replayer/op_plan.h"

namespace etb::replay::detail {

// Marks the 0-dim Double/Long/Bool leaves among `step`'s tensor arguments
// as wrapped numbers when the op's recorded outputs show they did not take
// part in type promotion (an output dtype other than theirs): that is how
// a Python scalar reaches a Tensor overload (aten::mul.Tensor(loss, 0.1)).
void markWrappedNumbers(const trace::Trace& trace, const trace::Node& node,
                        const PlanStep& step, Plan& plan);

// The rule above for one recorded input tensor of `node`.
bool isWrappedNumber(const trace::Trace& trace, const trace::Node& node,
                     const trace::TensorRef& ref);

// Draws the leaves `step` reads as a layer's weight (convolutions, linear,
// addmm's mat2, mm's and matmul's second operand, the 2-D weights of an
// lstm/gru/rnn's parameter list) as PyTorch initialises them: zero-mean,
// from U(-b, b) with b = 1/sqrt(fan_in) (fan_in = numel / size(0) of the
// leaf, so a weight reached through t() counts its own rows). The default
// [0, 1) for every leaf makes all-positive weights whose gradients grow by
// about fan_in/2 per layer: a resnet18's backward overflowed in the first
// iteration and every later one replayed on NaN, where max_pool2d ran
// twice as fast as on finite activations. Leaves another rule set keep it.
void initWeights(const trace::Trace& trace, const PlanStep& step, Plan& plan);

// Records, for each output of `step` that is its first input's values
// rearranged or retyped (sort's values, to, clone, view, ...), the leaf
// those values come from (Plan::value_source).
void traceValueSources(const PlanStep& step, Plan& plan);

// The leaf whose values `slot` holds: itself for a leaf, its value source
// for a computed slot, kNoSlot when neither.
int32_t valueLeaf(const Plan& plan, int32_t slot);

// True for ops whose output shapes depend on input values (nonzero,
// masked_select, boolean-mask indexing, unique, ...).
bool hasDataDependentShape(std::string_view name);

// `t` with the recorded shape: the overlapping part copied, the rest zero
// (a valid index for whatever an index output feeds). `t` when equal.
at::Tensor pinToShape(const at::Tensor& t, const std::vector<int64_t>& shape,
                      const std::vector<int64_t>& strides);

// For index_put_ (and _index_put_impl_, index_put) with one boolean mask
// as its only index: how many elements the mask selected in the original,
// read off the recorded values' shape; for masked_scatter, the source's
// element count; for masked_select_backward(grad, input, mask), the
// gradient's; -1 when the recording cannot say (values broadcast, several
// indices). The mask is the argument maskArgument() names.
int64_t recordedMaskCount(const trace::Trace& trace, const trace::Node& node,
                          std::string_view name);

// The argument that holds the mask of an op recordedMaskCount() knows: 2 for
// masked_select_backward, 1 for the others.
uint32_t maskArgument(std::string_view name);

// `mask` (bool or uint8) with exactly k elements set: its own first ones
// kept, the rest cleared, or its first clear elements set. Undefined when
// the mask has fewer than k elements.
at::Tensor maskWithCount(const at::Tensor& mask, int64_t k);

// The reduced dtype (BFloat16 or Half) `node` ran at under autocast, or
// Undefined: the recording shows a child op of the same name whose floating
// tensor inputs have other dtypes than the node's own (autocast cast them
// and redispatched). Replaying the node without autocast would compute, and
// hand on, the wrong dtype.
at::ScalarType autocastDtype(const trace::Trace& trace, const trace::Node& node,
                             const std::vector<uint32_t>& children);

// The dtypes the kernel of an autocast op saw: its same-named child's tensor
// inputs (lists flattened), in the node's input order; empty when `node`
// did not run under autocast.
std::vector<trace::DType> autocastInputDtypes(const trace::Trace& trace, const trace::Node& node,
                                              const std::vector<uint32_t>& children);

// Lengths of b sequences, descending, with maximum m and sum s; empty when
// none exist.
std::vector<int64_t> packedLengths(int64_t b, int64_t m, int64_t s);

// For a recorded _pack_padded_sequence(input, lengths, batch_first): lengths
// that give its recorded data ([sum, ...]) and batch_sizes ([max]) outputs;
// empty when the recording does not pin them.
std::vector<int64_t> packedLengthsOf(const trace::Trace& trace, const trace::Node& node);

// Runs a call under autocast at `dtype` on `device` (Undefined: as is),
// restoring the thread's autocast state after it.
class AutocastScope {
 public:
  AutocastScope(at::ScalarType dtype, at::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false, cpu_ = true, was_enabled_ = false;
  at::ScalarType was_dtype_ = at::ScalarType::Undefined;
};

// For an RNN over a packed sequence (aten::gru/lstm/rnn_* with data and
// batch_sizes), _pad_packed_sequence or _pack_padded_sequence_backward:
// batch_sizes (the op's second tensor argument) that fit
// the recorded data, batch and step count; empty when they cannot be told.
std::vector<int64_t> packedBatchSizesOf(const trace::Trace& trace, const trace::Node& node);

// A sparse tensor as torch 1.13's observer records it: defined, no storage
// (storage id 0, device "", itemsize 0), a non-empty shape.
bool isSparseRef(const trace::Trace& trace, const trace::TensorRef& ref);

// A sparse COO leaf of the recorded shape and dtype: one sparse dimension
// (embedding gradients), min(rows, 64) random rows, coalesced.
at::Tensor makeSparseLeaf(const std::vector<int64_t>& shape, at::ScalarType dtype,
                          at::Device device, at::Generator& gen);

// For aten::coalesce / aten::_coalesce: how many elements its sparse output
// specified in the original (duplicates merged: it depends on the index
// values), read off a later _nnz / _indices / _values of that output; -1
// when no such node was recorded. Torch 1.13 records sparse tensors without
// their nnz, so the readers are the only witnesses.
int64_t recordedSparseNnz(const trace::Trace& trace, uint32_t node_index, std::string_view name);

// The coalesced sparse `t` with exactly k specified elements (one sparse
// dimension): its first k rows kept, or rows it lacks added with zero
// values. `t` itself when it has k already, is not sparse, has several
// sparse dimensions or too few rows.
at::Tensor sparseWithNnz(const at::Tensor& t, int64_t k);

}  // namespace etb::replay::detail
