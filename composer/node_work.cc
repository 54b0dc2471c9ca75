// SPDX-License-Identifier: MIT
#include "composer/node_work.h"

#include <string_view>

namespace etb::compose {
namespace {
using trace::Value;

uint64_t elems(const trace::Trace& t, const Value& v) {
  uint64_t n = v.kind == trace::ValueKind::kTensor ? t.tensors[v.tensor].numel : 0;
  for (const Value& x : v.items) n += elems(t, x);
  return n;
}

uint64_t bytes(const trace::Trace& t, const Value& v) {
  uint64_t n = 0;
  if (v.kind == trace::ValueKind::kTensor) {
    const trace::TensorRef& r = t.tensors[v.tensor];
    const int item = trace::itemBytes(r);
    n = r.numel * static_cast<uint64_t>(item > 0 ? item : 4);
  }
  for (const Value& x : v.items) n += bytes(t, x);
  return n;
}

// The i-th tensor argument among a node's inputs, or nullptr.
const trace::TensorRef* tensorArg(const trace::Trace& t, const trace::Node& n, size_t i) {
  for (const Value& v : n.inputs) {
    if (v.kind != trace::ValueKind::kTensor) continue;
    if (i-- == 0) return &t.tensors[v.tensor];
  }
  return nullptr;
}
}  // namespace

bool isMatmulLike(const trace::Trace& t, const trace::Node& n) {
  const std::string_view name = t.name(n);
  for (std::string_view op : {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                              "aten::matmul", "aten::linear", "aten::convolution",
                              "aten::_convolution", "aten::conv2d", "aten::conv1d",
                              "aten::mkldnn_convolution", "aten::cudnn_convolution"}) {
    if (name == op) return true;
  }
  return false;
}

double nodeWork(const trace::Trace& t, const trace::Node& n) {
  if (isMatmulLike(t, n) && !n.outputs.empty()) {
    const double out = static_cast<double>(elems(t, n.outputs[0]));
    const std::string_view name = t.name(n);
    if (name.find("conv") != std::string_view::npos) {
      const trace::TensorRef* w = tensorArg(t, n, 1);
      if (w == nullptr || t.list(w->shape).empty() || t.list(w->shape)[0] == 0) return out;
      return out * static_cast<double>(w->numel) / static_cast<double>(t.list(w->shape)[0]);
    }
    // addmm/baddbmm: (bias, a, b); the others: (a, b, ...).
    const bool biased = name == "aten::addmm" || name == "aten::baddbmm";
    const trace::TensorRef* a = tensorArg(t, n, biased ? 1 : 0);
    if (a != nullptr && !t.list(a->shape).empty()) {
      return out * static_cast<double>(t.list(a->shape).back());
    }
    return out;
  }
  return static_cast<double>(valueBytes(t, n.inputs) + valueBytes(t, n.outputs));
}

CallSizes callSizes(const trace::Trace& t, const trace::Node& n) {
  CallSizes s;
  for (const Value& v : n.inputs) s.in_elems += elems(t, v);
  for (const Value& v : n.outputs) s.out_elems += elems(t, v);
  return s;
}

uint64_t valueBytes(const trace::Trace& t, const std::vector<trace::Value>& values) {
  uint64_t n = 0;
  for (const Value& v : values) n += bytes(t, v);
  return n;
}

}  // namespace etb::compose
