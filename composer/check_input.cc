// SPDX-License-Identifier: MIT
#include "composer/check_input.h"

#include "replayer/data_rules.h"
#include "replayer/op_plan.h"

namespace etb::compose {

// One input of a check run. What the trace cannot say about values is made
// up as the replay does (replayer/data_rules.h): Python numbers stay
// wrapped, sparse tensors are sparse, an autocast op gets the dtypes its
// kernel saw; on CPU the data kernels validate is valid (0.5 for BCE's
// [0, 1], 1 for a scalar divisor, 0 for an index, a packed sequence's
// recorded lengths and batch sizes).
at::Tensor makeCheckInput(const trace::Trace& t, const trace::Node& n,
                          const std::vector<uint32_t>& slot_tensor, size_t k, const CheckRun& run) {
  const trace::TensorRef& r = t.tensors[slot_tensor[k]];
  const std::vector<trace::DType>& autocast = *run.autocast;
  const bool cast = autocast.size() == slot_tensor.size();
  at::ScalarType st = replay::detail::toScalarType(cast ? autocast[k] : r.dtype);
  if (run.standin && (st == at::kHalf || st == at::kBFloat16)) st = at::kFloat;
  const at::Device device = run.device;
  const std::vector<int64_t>& shape = t.list(r.shape);
  if (replay::detail::isSparseRef(t, r)) {
    return replay::detail::makeSparseLeaf(shape, st, at::Device(at::kCPU), *run.gen);
  }
  at::Tensor x = at::empty_strided(shape, replay::detail::recordedStrides(t, r),
                                   at::TensorOptions().dtype(st).device(device));
  if (!device.is_meta() && at::isFloatingType(st)) x.fill_(0.5);
  if (!device.is_meta() && at::isIntegralType(st, true)) x.fill_(shape.empty() ? 1 : 0);
  if (!device.is_meta() && k == 1) {
    std::vector<int64_t> lengths = replay::detail::packedLengthsOf(t, n);
    if (lengths.empty()) lengths = replay::detail::packedBatchSizesOf(t, n);
    if (!lengths.empty() && static_cast<int64_t>(lengths.size()) == x.numel() &&
        st == at::kLong) {
      x.copy_(at::tensor(lengths, at::kLong).view(x.sizes()));
    }
  }
  if (shape.empty() && replay::detail::isWrappedNumber(t, n, r)) {
    x.unsafeGetTensorImpl()->set_wrapped_number(true);
  }
  return x;
}

}  // namespace etb::compose
