// SPDX-License-Identifier: MIT
#include "predictor/op_shapes.h"

#include <algorithm>
#include <numeric>

namespace etb::predict {
namespace {

double product(const std::vector<int64_t>& v, size_t from, size_t to) {
  double p = 1;
  for (size_t i = from; i < to && i < v.size(); ++i) p *= static_cast<double>(v[i]);
  return p;
}

TensorFacts factsOf(const trace::Trace& t, const trace::TensorRef& r, size_t arg) {
  TensorFacts f;
  f.shape = t.list(r.shape);
  const int item = trace::itemBytes(r);
  f.numel = product(f.shape, 0, f.shape.size());
  f.bytes = f.numel * (item > 0 ? item : 4);
  f.tensor_id = r.tensor_id;
  f.storage_id = r.storage_id;
  f.arg = arg;
  f.dtype = r.dtype;
  return f;
}

void collect(const trace::Trace& t, const std::vector<trace::Value>& values,
             std::vector<TensorFacts>& flat, std::vector<std::vector<TensorFacts>>* lists) {
  for (size_t i = 0; i < values.size(); ++i) {
    const trace::Value& v = values[i];
    if (v.kind == trace::ValueKind::kTensor) flat.push_back(factsOf(t, t.tensors[v.tensor], i));
    if (v.kind != trace::ValueKind::kList && v.kind != trace::ValueKind::kTuple) continue;
    std::vector<TensorFacts> items;
    for (const trace::Value& item : v.items) {
      if (item.kind == trace::ValueKind::kTensor) items.push_back(factsOf(t, t.tensors[item.tensor], i));
    }
    flat.insert(flat.end(), items.begin(), items.end());
    if (lists && !items.empty()) lists->push_back(std::move(items));
  }
}
}  // namespace

double OpShapes::inputBytes() const {
  double b = 0;
  for (const TensorFacts& f : in) b += f.bytes;
  return b;
}

double OpShapes::bytes() const {
  double b = inputBytes();
  for (const TensorFacts& f : out) b += f.bytes;
  return b;
}

trace::DType OpShapes::computeDType() const {
  for (const std::vector<TensorFacts>* side : {&out, &in}) {
    for (const TensorFacts& f : *side) {
      if (f.dtype != trace::DType::kUnknown) return f.dtype;
    }
  }
  return trace::DType::kUnknown;
}

bool OpShapes::outputSameAsInput() const {
  if (in.empty() || out.empty()) return false;
  return out.front().tensor_id == in.front().tensor_id ||
         (out.front().storage_id == in.front().storage_id && out.front().storage_id != 0);
}

const TensorFacts* OpShapes::inputArg(size_t arg) const {
  for (const TensorFacts& f : in) {
    if (f.arg == arg) return &f;
  }
  return nullptr;
}

OpShapes opShapes(const trace::Trace& t, const trace::Node& node) {
  OpShapes s;
  collect(t, node.inputs, s.in, &s.in_lists);
  collect(t, node.outputs, s.out, nullptr);
  for (const trace::Value& v : node.inputs) s.args.push_back(&v);
  return s;
}

GemmDims gemmDims(const std::string& op, const OpShapes& s) {
  const bool shifted = op == "addmm" || op == "baddbmm" || op == "addmv" || op == "_addmm_activation";
  const TensorFacts* a = s.inputArg(shifted ? 1 : 0);
  const TensorFacts* b = s.inputArg(shifted ? 2 : 1);
  GemmDims d;
  if (!a || !b || a->shape.empty() || b->shape.empty()) return d;
  const auto& x = a->shape;
  const auto& w = b->shape;
  const size_t rx = x.size();
  if (op == "linear") {  // x[..., K] @ w[N, K]^T
    d = {true, 1, product(x, 0, rx - 1), static_cast<double>(w[0]), static_cast<double>(x[rx - 1])};
  } else if (w.size() == 1) {  // matrix-vector
    d = {true, 1, product(x, 0, rx - 1), 1, static_cast<double>(x[rx - 1])};
  } else if (rx >= 3 && w.size() >= 3) {  // batched
    d = {true, product(x, 0, rx - 2), static_cast<double>(x[rx - 2]),
         static_cast<double>(w.back()), static_cast<double>(x[rx - 1])};
  } else if (rx >= 2) {  // [..., M, K] @ [K, N]: batch folds into M
    d = {true, 1, product(x, 0, rx - 1), static_cast<double>(w.back()), static_cast<double>(x[rx - 1])};
  }
  if (op == "linear") d.b_transposed = !b->transposed;  // W.t(), unless W is itself one
  else if (w.size() == 2 && d.b == 1) d.b_transposed = b->transposed;
  return d;
}

namespace {
// The reduced dims of a reduction over `rank` dims, sorted; empty = all.
std::vector<int64_t> reducedDims(const OpShapes& s, size_t rank) {
  std::vector<int64_t> dims;
  const double out = s.out.empty() ? 1 : s.out.front().numel;
  if (s.args.size() > 1 && s.args[1]->kind == trace::ValueKind::kList) {
    for (const trace::Value& v : s.args[1]->items) {
      if (v.kind == trace::ValueKind::kInt) dims.push_back(v.i);
    }
  } else if (s.args.size() > 1 && s.args[1]->kind == trace::ValueKind::kInt && out > 1) {
    dims.push_back(s.args[1]->i);  // sum(self, dtype) has an Int here too: its output is 1
  }
  for (int64_t& d : dims) d = d < 0 ? d + static_cast<int64_t>(rank) : d;
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  if (!dims.empty() && (dims.front() < 0 || dims.back() >= static_cast<int64_t>(rank))) dims.clear();
  return dims;
}
}  // namespace

ReduceShape reduceShapeOf(const OpShapes& s) {
  ReduceShape r;
  const TensorFacts* x = s.inputArg(0);
  if (!x) return r;
  r.valid = true;
  r.bytes = x->bytes;
  r.reduced = std::max(x->numel, 1.0);
  const std::vector<int64_t> dims = reducedDims(s, x->shape.size());
  const bool all = dims.empty() || (!s.out.empty() && s.out.front().numel <= 1);
  if (all) return r;
  r.outer = product(x->shape, 0, static_cast<size_t>(dims.front()));
  r.inner = product(x->shape, static_cast<size_t>(dims.back()) + 1, x->shape.size());
  r.reduced = std::max(1.0, x->numel / std::max(r.outer * r.inner, 1.0));
  return r;
}

ConvShape convShapeOf(const ConvPoint& c) {
  // A transposed one's GEMM runs over its input pixels (convShapeOf below).
  const double oh = c.transposed ? static_cast<double>(c.h)
                                 : static_cast<double>((c.h + 2 * (c.kh / 2) - c.kh) / c.stride + 1);
  const double ow = c.transposed ? static_cast<double>(c.w)
                                 : static_cast<double>((c.w + 2 * (c.kw / 2) - c.kw) / c.stride + 1);
  ConvShape s{true, static_cast<double>(c.n) * oh * ow, static_cast<double>(c.oc),
              static_cast<double>(c.c / c.groups * c.kh * c.kw), static_cast<double>(c.n),
              static_cast<double>(c.stride), static_cast<double>(std::max<int64_t>(c.groups, 1)),
              static_cast<double>(c.kh * c.kw)};
  s.transposed = c.transposed;
  return s;
}

ConvShape convShapeOf(const OpShapes& s, bool backward) {
  // forward: (input, weight, ...) -> output; backward: (grad_out, input, weight)
  const TensorFacts* y = backward ? s.inputArg(0) : (s.out.empty() ? nullptr : &s.out[0]);
  const TensorFacts* w = s.inputArg(backward ? 2 : 1);
  ConvShape c;
  if (!y || !w || y->shape.size() < 3 || w->shape.size() < 3) return c;
  c.valid = true;
  c.batch = static_cast<double>(y->shape[0]);
  c.m = c.batch * product(y->shape, 2, y->shape.size());
  c.n = static_cast<double>(w->shape[0]);
  c.k = product(w->shape, 1, w->shape.size());
  c.window = product(w->shape, 2, w->shape.size());
  // groups: the input's channels over the weight's input channels per group
  const TensorFacts* x = s.inputArg(backward ? 1 : 0);
  if (x && x->shape.size() >= 2 && w->shape[1] > 0 && x->shape[1] % w->shape[1] == 0) {
    c.groups = static_cast<double>(std::max<int64_t>(x->shape[1] / w->shape[1], 1));
  }
  // stride: input 3 of convolution / conv2d, input 4 of convolution_backward
  const size_t at = backward ? 4 : 3;
  if (s.args.size() > at && s.args[at]->kind == trace::ValueKind::kList &&
      !s.args[at]->items.empty() && s.args[at]->items[0].kind == trace::ValueKind::kInt) {
    c.stride = static_cast<double>(std::max<int64_t>(s.args[at]->items[0].i, 1));
  }
  // transposed: input 6 of convolution / _convolution, input 7 of convolution_backward
  const size_t tr = backward ? 7 : 6;
  c.transposed = s.args.size() > tr && s.args[tr]->kind == trace::ValueKind::kBool && s.args[tr]->b;
  if (c.transposed && x && x->shape.size() >= 3) {
    // Its weight is [in, out / groups, kh, kw]: groups from the argument
    // after output_padding (input 8, 9 of the backward), and each input
    // pixel multiplies its in / groups channels into out x kh x kw outputs:
    // the GEMM of the forward convolution it is the input gradient of (a
    // stride-2 one read from the output's pixels had 4x the FLOPs).
    const size_t g = tr + 2;
    c.groups = s.args.size() > g && s.args[g]->kind == trace::ValueKind::kInt
                   ? static_cast<double>(std::max<int64_t>(s.args[g]->i, 1))
                   : 1;
    c.m = c.batch * product(x->shape, 2, x->shape.size());
    c.n = static_cast<double>(y->shape[1]);
    c.k = static_cast<double>(x->shape[1]) / c.groups * c.window;
  }
  return c;
}

}  // namespace etb::predict
