// SPDX-License-Identifier: MIT
//
// The prepared form of one replayed iteration. Everything that can be
// decided once (operator lookup, constant arguments, which tensor goes where,
// when a tensor dies) is decided before the first iteration, so running a
// step is: push IValues, callBoxed, store outputs.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/trace.h"
#include "replayer/leaf_layout.h"
#include "replayer/op_selection.h"
#include "replayer/replay_result.h"

namespace etb::replay::detail {

constexpr int32_t kNoSlot = -1;  // an undefined tensor / None list item

// kStorage: the storage of the tensor in slots[0].
enum class ArgKind : uint8_t { kConst, kTensor, kTensorList, kOptTensorList, kStorage };

// Where one argument of the boxed stack comes from.
struct ArgSource {
  ArgKind kind = ArgKind::kConst;
  c10::IValue value;           // kConst
  std::vector<int32_t> slots;  // kTensor: one; lists: one per item
};

// Where one recorded output tensor goes: returns[ret] (or item `item` of a
// returned list) is stored in `slot`; `tensor` is its TensorRef for checks.
struct OutBinding {
  uint32_t ret = 0;
  int32_t item = -1;
  int32_t slot = kNoSlot;
  uint32_t tensor = 0;
};

struct PlanStep {
  uint32_t node = 0;  // index into Trace::nodes
  bool is_comm = false;
  bool runnable = false;  // resolved (op) / has comm info (comm)
  std::string name;       // "aten::mm"
  std::string overload;   // "out"
  c10::optional<c10::OperatorHandle> op;
  std::vector<ArgSource> args;
  std::vector<OutBinding> outs;
  std::vector<int32_t> comm_inputs, comm_outputs;  // slots
  std::vector<int32_t> release;  // intermediate slots dead after this step
  bool synthesise = false;       // failed at run: fill outs from the recording
  bool noop = false;  // nothing to do on this device (record_stream on CPU)
  bool fp32 = false;  // no kernel for the recorded Half/BFloat16: run in float32
  // Output shapes that depend on input values (nonzero, boolean masks):
  // a replayed shape that differs from the recorded one is pinned to it.
  bool pin_shapes = false;
  // coalesce: the recorded nnz of its sparse output (-1 unknown); the
  // replay's indices merge differently, so its output is pinned to it.
  int64_t sparse_nnz = -1;
  // (argument, table size) of the op's index tensors; once an index faults
  // out of range (its values came from a scalar the trace does not record),
  // clamp_index clamps them into [0, size) before every call.
  std::vector<std::pair<uint32_t, int64_t>> index_bounds;
  bool clamp_index = false;
  // index_put_ / masked_scatter / masked_select_backward with a boolean
  // mask (maskArgument()): how many elements the original's mask selected
  // (-1 unknown); once the replay's mask fails on that count, fixed_mask
  // (the same mask with that count) replaces it in every call.
  int64_t mask_count = -1;
  at::Tensor fixed_mask;
  // Recorded under autocast at this dtype (BFloat16/Half); Undefined: not.
  at::ScalarType autocast = at::ScalarType::Undefined;
  bool adapted = false;  // listed in coverage.adapted_ops already
  // --autograd record: 1 runs in grad mode (the forward), 0 under no_grad;
  // -1 leaves the mode as it is (recording off).
  int8_t grad_mode = -1;
};

// A leaf slot's data rule (set from consumers, tensor_range or dtype).
struct LeafInit {
  int64_t lo = 0, hi = -1;  // integer range [lo, hi); hi < lo = unset
  bool is_index = false;    // draw with --index-dist (Zipf when asked)
  int64_t offsets_of = -1;  // embedding_bag offsets: numel of the indices
  std::vector<int64_t> values;  // exact values (packed-sequence lengths)
  double float_lo = 0, float_hi = 1;  // floating data range (observers' running min/max)
  // A Python number the op wrapped into a 0-dim tensor: it must not take
  // part in type promotion as a tensor would (0.1 * float loss is float).
  bool wrapped_number = false;
};

struct Plan {
  std::vector<PlanStep> steps;
  // Slots: leaves are allocated once (per storage) before the first
  // iteration; intermediates are produced by running ops.
  std::vector<at::Tensor> slots;
  std::vector<int8_t> is_leaf;
  std::vector<uint32_t> slot_tensor;  // TensorRef index that defined the slot
  // For a slot an op computed from one leaf without changing its values'
  // set (sort, to, view, clone, ...): that leaf, so rules on the values
  // (index ranges, lengths) reach the data that is drawn; else kNoSlot.
  std::vector<int32_t> value_source;
  std::map<int32_t, LeafInit> leaf_init;
  Coverage coverage;
  uint64_t leaf_bytes = 0;
  size_t leaf_layouts_derived = 0;  // leaves laid out by their recorded view op
  at::Device device = at::kCPU;
};

struct PlanOptions {
  at::Device device = at::kCPU;
  double zipf_alpha = 0;  // 0 = uniform indices
  uint64_t seed = 0;
};

// Builds the plan: resolves operators, decodes arguments, assigns slots,
// applies index rules; then allocates and initialises the leaf tensors.
Plan buildPlan(const trace::Trace& trace, const std::vector<SelectedNode>& nodes,
               const PlanOptions& options);

// Where a leaf lives: the replay's device, except that a GPU trace's CPU
// tensors stay on the CPU (libtorch keeps some there on purpose: efficient
// attention's philox seed and offset, which its backward reads on the host;
// one moved to the GPU crashed libtorch 2.11's backward). A CPU trace
// replayed on a GPU moves everything.
class LeafDevices {
 public:
  LeafDevices(const trace::Trace& trace, const at::Device& replay);
  at::Device of(trace::StrId recorded) const;

 private:
  const trace::Trace& trace_;
  at::Device replay_;
  bool gpu_trace_ = false;
};

// Allocates leaf tensors per storage and fills them (tensor_init.cc), laid
// out as recorded or, without recorded strides, as `layouts` derives.
void allocateLeaves(const trace::Trace& trace, Plan& plan, const PlanOptions& options,
                    const ViewLayouts& layouts);

// Draws `slots` (leaves) again by their rules, floating ones first as
// allocateLeaves() does, from a generator seeded afresh with the seed: the
// same values at every call. Floating leaves on a device are drawn there
// (its generator, seeded alike: values other than allocateLeaves' host
// draw, the same at every call) and the caller synchronises before timing.
void refillLeaves(Plan& plan, const PlanOptions& options, const std::vector<int32_t>& slots);

// Shape/stride helpers shared by the plan and the checks.
std::vector<int64_t> recordedStrides(const trace::Trace& trace, const trace::TensorRef& ref);
at::ScalarType toScalarType(trace::DType dtype);

}  // namespace etb::replay::detail
