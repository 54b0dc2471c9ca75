// SPDX-License-Identifier: MIT
#include "replayer/compat_ops.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>

namespace etb::replay::detail {
namespace {

// softmax(q k^T * scale + mask) before dropout; q, k, v are [..., L, E].
at::Tensor attentionWeights(const at::Tensor& q, const at::Tensor& k,
                            const c10::optional<at::Tensor>& mask, bool causal,
                            c10::optional<double> scale) {
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * s;
  if (causal) {
    const at::Tensor keep = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).tril();
    scores = scores.masked_fill(keep.logical_not(), -INFINITY);
  }
  if (mask && mask->defined()) {
    scores = mask->scalar_type() == at::kBool ? scores.masked_fill(mask->logical_not(), -INFINITY)
                                              : scores + *mask;
  }
  return at::softmax(scores, -1);
}

// [B, H, L, E] laid out as [B, L, H, E], as torch 2.x's fused kernels
// (efficient, flash, CPU flash) return outputs and gradients: the ops after
// them see these strides.
at::Tensor bmhk(const at::Tensor& x) {
  if (x.dim() != 4) return x;
  return at::empty({x.size(0), x.size(2), x.size(1), x.size(3)}, x.options())
      .transpose(1, 2)
      .copy_(x);
}

// Grouped-query attention: each key/value head serves q's heads / kv heads.
at::Tensor expandHeads(const at::Tensor& kv, const at::Tensor& q, bool gqa) {
  if (!gqa || kv.dim() < 3 || kv.size(-3) == q.size(-3)) return kv;
  return kv.repeat_interleave(q.size(-3) / kv.size(-3), -3);
}

at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                const c10::optional<at::Tensor>& mask, double dropout_p, bool causal,
                c10::optional<double> scale, bool gqa) {
  at::Tensor p = attentionWeights(q, expandHeads(k, q, gqa), mask, causal, scale);
  if (dropout_p > 0) p = at::dropout(p, dropout_p, /*train=*/true);
  return bmhk(at::matmul(p, expandHeads(v, q, gqa)));
}

// The closed-form gradients of softmax attention, recomputing the weights
// (the recorded logsumexp and philox state belong to the GPU kernel; the
// dropout mask of the forward cannot be reproduced, so none is applied).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sdpaBackward(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& attn_bias, const at::Tensor& /*out*/, const at::Tensor& /*logsumexp*/,
    const at::Tensor& /*philox_seed*/, const at::Tensor& /*philox_offset*/, double /*dropout_p*/,
    std::array<bool, 4> grad_mask, bool causal, c10::optional<double> scale) {
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  const c10::optional<at::Tensor> bias =
      attn_bias.defined() ? c10::optional<at::Tensor>(attn_bias) : c10::nullopt;
  const at::Tensor p = attentionWeights(q, k, bias, causal, scale);
  const at::Tensor grad_v = at::matmul(p.transpose(-2, -1), grad_out);
  const at::Tensor grad_p = at::matmul(grad_out, v.transpose(-2, -1));
  const at::Tensor grad_s = p * (grad_p - (grad_p * p).sum(-1, /*keepdim=*/true));
  at::Tensor grad_bias;
  if (grad_mask[3] && attn_bias.defined()) grad_bias = at::sum_to(grad_s, attn_bias.sizes());
  return {grad_mask[0] ? bmhk(at::matmul(grad_s, k) * s) : at::Tensor(),
          grad_mask[1] ? bmhk(at::matmul(grad_s.transpose(-2, -1), q) * s) : at::Tensor(),
          grad_mask[2] ? bmhk(grad_v) : at::Tensor(), grad_bias};
}

void foreachLerpScalar(at::TensorList self, at::TensorList end, const at::Scalar& weight) {
  for (size_t i = 0; i < self.size(); ++i) self[i].lerp_(end[i], weight);
}

void foreachLerpList(at::TensorList self, at::TensorList end, at::TensorList weights) {
  for (size_t i = 0; i < self.size(); ++i) self[i].lerp_(end[i], weights[i]);
}

}  // namespace

// The schemas are torch 2.x's own, so the recorded arguments decode as they do there.
TORCH_LIBRARY(etb_compat, m) {
  m.def("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
        "Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, "
        "float? scale=None, bool enable_gqa=False) -> Tensor",
        &sdpa);
  m.def("_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, "
        "Tensor key, Tensor value, Tensor attn_bias, Tensor out, Tensor logsumexp, "
        "Tensor philox_seed, Tensor philox_offset, float dropout_p, bool[4] grad_input_mask, "
        "bool is_causal=False, *, float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)",
        &sdpaBackward);
  m.def("_foreach_lerp_.Scalar(Tensor(a!)[] self, Tensor[] tensors1, Scalar weight) -> ()",
        &foreachLerpScalar);
  m.def("_foreach_lerp_.List(Tensor(a!)[] self, Tensor[] tensors1, Tensor[] weights) -> ()",
        &foreachLerpList);
}

c10::optional<c10::OperatorHandle> compatOp(const std::string& name, const std::string& overload,
                                            std::string* what) {
  if (name.rfind("aten::", 0) != 0) return c10::nullopt;
  const std::string op = name.substr(6);
  auto h = c10::Dispatcher::singleton().findSchema({"etb_compat::" + op, overload});
  if (!h) return c10::nullopt;
  if (op == "scaled_dot_product_attention") {
    *what = "not in this libtorch: computed as matmul + softmax (+ dropout) + matmul";
  } else if (op == "_scaled_dot_product_efficient_attention_backward") {
    *what = "not in this libtorch: softmax attention's closed-form gradients (no dropout mask)";
  } else {
    *what = "not in this libtorch: one lerp_ per tensor";
  }
  return h;
}

}  // namespace etb::replay::detail
