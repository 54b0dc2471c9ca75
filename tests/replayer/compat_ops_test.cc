// SPDX-License-Identifier: MIT
//
// The stand-ins for torch 2.x operators this libtorch lacks
// (replayer/compat_ops.h), checked against independent references: the
// forward against attention's closed form written out here (softmax(q k^T /
// sqrt(E), causal mask) v; 1.13's own at::_scaled_dot_product_attention is
// gone from libtorch 2.x, where this test builds too), the backward against
// autograd through that reference, foreach lerp against per-tensor lerp.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "replayer/compat_ops.h"

namespace etb::replay::detail {
namespace {

c10::OperatorHandle standIn(const std::string& name, const std::string& overload = "") {
  std::string what;
  auto h = compatOp(name, overload, &what);
  if (!h) throw std::runtime_error("no stand-in for " + name);
  EXPECT_FALSE(what.empty());
  return *h;
}

at::Tensor mathAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         bool causal) {
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (causal) {
    const at::Tensor above = at::ones({q.size(-2), k.size(-2)}, at::kBool).triu(1);
    s = s.masked_fill(above, -std::numeric_limits<double>::infinity());
  }
  return at::matmul(at::softmax(s, -1), v);
}

std::vector<c10::IValue> call(const c10::OperatorHandle& op, std::vector<c10::IValue> stack) {
  op.callBoxed(&stack);
  return stack;
}

TEST(CompatOps, OnlyForOpsThisLibtorchLacks) {
  std::string what;
  EXPECT_FALSE(compatOp("aten::mm", "", &what));
  EXPECT_FALSE(compatOp("torchvision::nms", "", &what));
  EXPECT_TRUE(compatOp("aten::_foreach_lerp_", "Scalar", &what));
}

TEST(CompatOps, AttentionForwardMatchesLibtorchMathAndKeepsTheFusedLayout) {
  at::manual_seed(7);
  const at::Tensor q = at::randn({2, 3, 5, 4});
  const at::Tensor k = at::randn({2, 3, 5, 4});
  const at::Tensor v = at::randn({2, 3, 5, 4});
  for (bool causal : {false, true}) {
    const auto out = call(standIn("aten::scaled_dot_product_attention"),
                          {q, k, v, c10::IValue(), 0.0, causal, c10::IValue(), false});
    const at::Tensor got = out.at(0).toTensor();
    const at::Tensor want = mathAttention(q, k, v, causal);
    EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6)) << "causal " << causal;
    // [B, L, H, E] memory, as the recorded GPU output: strides (L*H*E, E, H*E, 1)
    EXPECT_EQ(got.strides(), (std::vector<int64_t>{60, 4, 12, 1}));
  }
}

TEST(CompatOps, AttentionBackwardIsAutogradsGradient) {
  at::manual_seed(11);
  for (bool causal : {false, true}) {
    const at::Tensor q = at::randn({2, 2, 6, 4}).requires_grad_();
    const at::Tensor k = at::randn({2, 2, 6, 4}).requires_grad_();
    const at::Tensor v = at::randn({2, 2, 6, 4}).requires_grad_();
    const at::Tensor g = at::randn({2, 2, 6, 4});
    const at::Tensor ref = mathAttention(q, k, v, causal);
    const auto want = torch::autograd::grad({ref}, {q, k, v}, {g});
    const auto out = call(standIn("aten::_scaled_dot_product_efficient_attention_backward"),
                          {g, q.detach(), k.detach(), v.detach(), at::Tensor(), ref.detach(),
                           at::Tensor(), at::Tensor(), at::Tensor(), 0.0,
                           c10::List<bool>({true, true, true, false}), causal, c10::IValue()});
    ASSERT_EQ(out.size(), 4u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(at::allclose(out[i].toTensor(), want[i], 1e-4, 1e-5))
          << "grad " << i << " causal " << causal;
    }
    EXPECT_FALSE(out[3].toTensor().defined());  // no bias, none asked for
  }
}

TEST(CompatOps, ForeachLerpIsLerpPerTensor) {
  at::manual_seed(3);
  std::vector<at::Tensor> self = {at::randn({3}), at::randn({2, 2})};
  const std::vector<at::Tensor> end = {at::randn({3}), at::randn({2, 2})};
  std::vector<at::Tensor> want;
  for (size_t i = 0; i < self.size(); ++i) want.push_back(at::lerp(self[i], end[i], 0.25));
  call(standIn("aten::_foreach_lerp_", "Scalar"), {self, end, at::Scalar(0.25)});
  for (size_t i = 0; i < self.size(); ++i) EXPECT_TRUE(at::allclose(self[i], want[i]));
}

}  // namespace
}  // namespace etb::replay::detail
