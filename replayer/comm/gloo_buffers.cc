// SPDX-License-Identifier: MIT
//
// Tensors for ProcessGroupGloo: the replay's own tensors when they are the
// recorded message, scratch otherwise, and the conversions for the dtypes
// gloo 1.13 has no kernels for (bfloat16, bool, int16, complex).
#include <functional>

#include "replayer/comm/gloo_comm.h"
#include "replayer/comm/tensor_bind.h"

namespace etb::replay::comm {
namespace {
using trace::CommType;

bool reduces(CommType t) {
  return t == CommType::kAllReduce || t == CommType::kReduce || t == CommType::kReduceScatter;
}

// The single bound tensor as a flat host tensor of `elems` elements of
// `type`, or an undefined tensor when it cannot serve (the MPI backend's
// rule, plus the dtype: gloo reads the tensor's own type).
at::Tensor bound(const std::vector<at::Tensor>& ts, uint64_t elems, at::ScalarType type) {
  if (ts.size() != 1) return {};
  const at::Tensor& t = ts[0];
  if (!t.defined() || t.is_cuda() || !t.is_contiguous() || t.scalar_type() != type) return {};
  if (static_cast<uint64_t>(t.numel()) != elems) return {};
  return t.view({-1});
}

class Binder {
 public:
  Binder(const Message& m, const ScratchFn& scratch)
      : m_(m), scratch_(scratch), native_(scalarTypeOf(m.dtype)) {
    if (glooCarries(native_)) {
      wire_ = native_;
    } else if (reduces(m.type)) {
      wire_ = at::kFloat;  // reduce in float32, round back at completion
    } else {
      wire_ = at::kByte;  // data movement only: the bytes are the message
    }
  }

  // The wire tensor for `elems` native elements bound from `user`
  // (undefined: scratch); remembers the user tensor when the wire is a copy.
  at::Tensor wire(const at::Tensor& user, uint64_t elems, int slot, GlooBuffers& b,
                  at::Tensor* back) {
    const auto n = static_cast<int64_t>(elems);
    if (wire_ == native_) return user.defined() ? user : scratch_(n, native_, slot);
    if (wire_ == at::kByte) {
      at::Tensor u = user.defined() ? user : scratch_(n, native_, slot);
      b.keep.push_back(u);  // the byte view does not own the memory
      return at::from_blob(u.data_ptr(), {n * m_.elem_size}, at::kByte);
    }
    if (!user.defined()) return scratch_(n, at::kFloat, slot);
    *back = user;
    return user.to(at::kFloat);
  }
  at::ScalarType native() const { return native_; }
  int64_t wirePerElem() const { return wire_ == at::kByte ? m_.elem_size : 1; }

 private:
  const Message& m_;
  const ScratchFn& scratch_;
  at::ScalarType native_;
  at::ScalarType wire_;
};

void divideResult(at::Tensor t, int n) {
  if (n <= 1 || !t.defined() || t.scalar_type() == at::kBool) return;
  if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type())) {
    t.div_(n);
  } else {
    t.div_(n, "trunc");
  }
}
}  // namespace

bool glooCarries(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kChar:
    case at::kByte:
    case at::kInt:
    case at::kLong:
      return true;
    default:
      return false;
  }
}

GlooBuffers glooBuffers(const Message& m, const std::vector<at::Tensor>& inputs,
                        const std::vector<at::Tensor>& outputs, const ScratchFn& scratch) {
  Binder bind(m, scratch);
  const at::ScalarType t = bind.native();
  GlooBuffers b;
  b.wire_per_elem = bind.wirePerElem();
  if (m.in_place) {
    at::Tensor user = bound(inputs, m.send_elems, t);
    if (!user.defined()) user = bound(outputs, m.send_elems, t);
    b.send = b.recv = bind.wire(user, m.send_elems, 0, b, &b.user_send);
    return b;
  }
  if (m.type == CommType::kReduceScatter) {
    // ProcessGroupGloo 1.13 has no reduce_scatter: all-reduce a copy of the
    // input and keep this rank's chunk (same result, allreduce's traffic).
    b.reduce_scatter_via_allreduce = true;
    at::Tensor in = bound(inputs, m.send_elems, t);
    b.send = scratch(static_cast<int64_t>(m.send_elems), glooCarries(t) ? t : at::kFloat, 2);
    if (in.defined()) b.send.copy_(in);
    b.recv = bound(outputs, m.recv_elems, t);
    if (!b.recv.defined()) b.recv = scratch(static_cast<int64_t>(m.recv_elems), t, 1);
    return b;
  }
  if (m.send_elems > 0 || m.type == CommType::kSend) {
    b.send = bind.wire(bound(inputs, m.send_elems, t), m.send_elems, 0, b, &b.user_send);
  }
  if (m.recv_elems > 0 || m.type == CommType::kRecv) {
    at::Tensor user = bound(outputs, m.recv_elems, t);
    if (!user.defined() && m.type == CommType::kRecv) user = bound(inputs, m.recv_elems, t);
    b.recv = bind.wire(user, m.recv_elems, 1, b, &b.user_recv);
  }
  return b;
}

void glooFinish(const Message& m, GlooBuffers& b) {
  const bool avg = m.op == trace::ReduceOp::kAvg;
  if (b.reduce_scatter_via_allreduce) {
    const auto n = static_cast<int64_t>(m.recv_elems);
    b.recv.copy_(b.send.narrow(0, static_cast<int64_t>(m.my_rank) * n, n));
    if (avg) divideResult(b.recv, m.group_size);
    return;
  }
  if (avg && (m.type != CommType::kReduce || m.my_rank == m.root)) {
    divideResult(b.send, m.group_size);
  }
  // Wire tensors that were float32 copies go back into the replay's tensors.
  if (b.user_send.defined() && b.user_send.data_ptr() != b.send.data_ptr()) {
    b.user_send.copy_(b.send);
  }
  if (b.user_recv.defined() && b.user_recv.data_ptr() != b.recv.data_ptr()) {
    b.user_recv.copy_(b.recv);
  }
}

}  // namespace etb::replay::comm
