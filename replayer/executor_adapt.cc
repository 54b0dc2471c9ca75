// SPDX-License-Identifier: MIT
// Executor: an op the trace cannot feed as recorded is adapted, counted and
// listed (coverage.adapted): replayer/data_rules.h says what is missing.
#include "replayer/data_rules.h"
#include "replayer/executor.h"

namespace etb::replay::detail {

// An index computed from a Python scalar the trace does not record (x *
// capacity) can point outside its table in the replay: from the first such
// fault on, the op's index arguments are clamped into range before the call.
bool Executor::tryClampIndices(PlanStep& step, const std::string& error) {
  if (step.clamp_index || step.index_bounds.empty()) return false;
  step.clamp_index = true;
  pushArgs(step);
  std::string ignored;
  if (!call(step, &ignored)) {
    step.clamp_index = false;
    return false;
  }
  adapt(step, "indices clamped into their table after: " + firstLine(error, 100));
  return true;
}

// A boolean mask computed from data the replay does not have selects a
// different number of elements than the original's, and index_put_ with
// the recorded values (a gradient) faults, or masked_scatter (and
// masked_select's backward) finds too few source elements: the mask is given the recorded
// count, once, and that mask is used from then on.
bool Executor::tryFixMask(PlanStep& step, const std::string& error) {
  if (step.mask_count < 0 || step.fixed_mask.defined()) return false;
  pushArgs(step);
  const uint32_t m = maskArgument(step.name);
  if (stack_.size() <= m) return false;
  const c10::IValue item = stack_[m].isList() ? stack_[m].toListRef()[0] : stack_[m];
  if (!item.isTensor()) return false;
  const at::Tensor mask = item.toTensor();
  step.fixed_mask = maskWithCount(mask, step.mask_count);
  if (!step.fixed_mask.defined()) return false;
  pushArgs(step);
  std::string ignored;
  if (!call(step, &ignored)) {
    step.fixed_mask = at::Tensor();
    return false;
  }
  adapt(step, "boolean mask set to the recorded " + std::to_string(step.mask_count) +
                  " elements after: " + firstLine(error, 100));
  return true;
}

void Executor::adapt(PlanStep& step, const std::string& what) {
  if (step.adapted) return;
  step.adapted = true;
  ++plan_.coverage.adapted;
  plan_.coverage.adapted_ops.push_back({trace_.nodes[step.node].id, step.name, what});
}

// A data-dependent output keeps the recorded shape, so that the ops that
// read it (and the recorded gradients that must match it) still fit.
at::Tensor Executor::pinned(PlanStep& step, const OutBinding& o, at::Tensor t) {
  const trace::TensorRef& r = trace_.tensors[o.tensor];
  const std::vector<int64_t>& shape = trace_.list(r.shape);
  if (!t.defined() || t.sizes() == c10::IntArrayRef(shape)) return t;
  at::Tensor out = pinToShape(t, shape, r.has_strides ? trace_.list(r.strides)
                                                      : std::vector<int64_t>{});
  if (!out.is_same(t)) {
    adapt(step, "output " + std::to_string(o.ret) + " shape " + shapeText(t.sizes()) +
                    " pinned to the recorded " + shapeText(shape));
  }
  return out;
}

// A coalesced sparse output keeps the recorded number of elements: the
// _indices / _values read off it, and the dense optimizer state updated
// through them, then have the recorded shapes.
at::Tensor Executor::pinnedNnz(PlanStep& step, at::Tensor t) {
  if (!t.defined() || !t.is_sparse() || t._nnz() == step.sparse_nnz) return t;
  const int64_t had = t._nnz();
  at::Tensor out = sparseWithNnz(t, step.sparse_nnz);
  if (!out.is_same(t)) {
    adapt(step, "sparse output's " + std::to_string(had) + " elements pinned to the recorded " +
                    std::to_string(step.sparse_nnz));
  }
  return out;
}

}  // namespace etb::replay::detail
