// SPDX-License-Identifier: MIT
#include "predictor/hidden_buffers.h"

#include <string_view>

namespace etb::predict {
namespace {

using trace::Value;
using trace::ValueKind;

const trace::TensorRef* tensorAt(const trace::Trace& t, const trace::Node& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i].kind != ValueKind::kTensor) return nullptr;
  return &t.tensors[n.inputs[i].tensor];
}

double bytesOf(const trace::TensorRef& r) {
  return static_cast<double>(r.numel) * trace::itemBytes(r);
}

// An int list argument (stride, padding, dilation); empty when absent.
std::vector<int64_t> intsAt(const trace::Node& n, size_t i) {
  std::vector<int64_t> v;
  if (i >= n.inputs.size()) return v;
  const Value& a = n.inputs[i];
  if (a.kind == ValueKind::kInt) v.push_back(a.i);
  if (a.kind != ValueKind::kList && a.kind != ValueKind::kTuple) return v;
  for (const Value& item : a.items) {
    if (item.kind == ValueKind::kInt) v.push_back(item.i);
  }
  return v;
}

int64_t intAt(const trace::Node& n, size_t i, int64_t otherwise) {
  return i < n.inputs.size() && n.inputs[i].kind == ValueKind::kInt ? n.inputs[i].i : otherwise;
}

bool boolAt(const trace::Node& n, size_t i) {
  return i < n.inputs.size() && ((n.inputs[i].kind == ValueKind::kBool && n.inputs[i].b) ||
                                 (n.inputs[i].kind == ValueKind::kInt && n.inputs[i].i != 0));
}

bool anyAbove(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v) {
    if (e > x) return true;
  }
  return false;
}

// Where each schema keeps the convolution arguments PyTorch's choice reads.
struct ConvArgs {
  size_t stride = 3, dilation = 5, transposed = 0, groups = 6;  // transposed 0: none
  bool known = false;  // the op is oneDNN's own (mkldnn_convolution)
};

// PyTorch 1.13's ConvParams::use_mkldnn for a plain CPU float32 input.
bool usesMkldnn(const trace::Trace& t, const trace::Node& n, size_t input, size_t weight,
                const ConvArgs& a, int threads) {
  const trace::TensorRef* in = tensorAt(t, n, input);
  const trace::TensorRef* w = tensorAt(t, n, weight);
  if (in == nullptr || w == nullptr || in->dtype != trace::DType::kFloat) return false;
  if (a.transposed != 0 && boolAt(n, a.transposed)) return false;
  const std::string_view device = t.str(in->device);
  if (in->has_device && !device.empty() && device != "cpu") return false;
  if (a.known) return true;
  const std::vector<int64_t>& shape = t.list(in->shape);
  const std::vector<int64_t>& kernel = t.list(w->shape);
  if (shape.size() < 3 || kernel.size() < 3) return false;
  const int64_t batch = shape[0], kh = kernel[kernel.size() - 2], kw = kernel.back();
  const bool one_by_one = kh == 1 && kw == 1;
  if (!(anyAbove(intsAt(n, a.stride), 1) || anyAbove(intsAt(n, a.dilation), 1) || batch >= 16 ||
        !one_by_one || threads > 1)) {
    return false;
  }
  return intAt(n, a.groups, 1) > 1 || (kh > 3 && kw > 3) || batch > 1 ||
         static_cast<double>(in->numel) > 20480;
}

// oneDNN's direct kernels for a few input channels (the first layer's RGB)
// read the plain layout; wider inputs are reordered to a blocked one.
bool reordersSource(const trace::Trace& t, const trace::TensorRef& input) {
  const std::vector<int64_t>& shape = t.list(input.shape);
  return shape.size() >= 2 && shape[1] >= 8;
}

class Script {
 public:
  size_t alloc(double bytes) {
    actions_.push_back({HiddenAction::kAlloc, bytes, 0});
    return allocs_++;
  }
  void free(size_t buffer) { actions_.push_back({HiddenAction::kFree, 0, buffer}); }
  void output(size_t index) { actions_.push_back({HiddenAction::kOutput, 0, index}); }
  void persist(double bytes) { actions_.push_back({HiddenAction::kPersist, bytes, 0}); }
  std::vector<HiddenAction> take() { return std::move(actions_); }

 private:
  std::vector<HiddenAction> actions_;
  size_t allocs_ = 0;
};

// ideep's pattern for one primitive: the primitive made (cached), the
// operands that need it reordered (in order), the blocked result, the operand
// copies freed (weight first, as logged), the plain result allocated, the
// blocked one freed.
void primitive(Script& s, const std::vector<double>& reordered, double weight_copy,
               double result, size_t output) {
  for (int k = 0; k < kPrimitiveObjects; ++k) s.persist(kPrimitiveObjectBytes);
  std::vector<size_t> copies;
  for (double b : reordered) copies.push_back(s.alloc(b));
  const size_t w = weight_copy > 0 ? s.alloc(weight_copy) : 0;
  const size_t blocked = s.alloc(result);
  if (weight_copy > 0) s.free(w);
  for (auto it = copies.rbegin(); it != copies.rend(); ++it) s.free(*it);
  s.output(output);
  s.free(blocked);
}

std::vector<HiddenAction> convForward(const trace::Trace& t, const trace::Node& n,
                                      const ConvArgs& a, int threads) {
  if (!usesMkldnn(t, n, 0, 1, a, threads) || n.outputs.empty() ||
      n.outputs[0].kind != ValueKind::kTensor) {
    return {};
  }
  const trace::TensorRef& in = *tensorAt(t, n, 0);
  Script s;
  std::vector<double> src;
  if (reordersSource(t, in)) src.push_back(bytesOf(in));
  primitive(s, src, bytesOf(*tensorAt(t, n, 1)), bytesOf(t.tensors[n.outputs[0].tensor]), 0);
  return s.take();
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride,
// padding, dilation, transposed, output_padding, groups, output_mask):
// the data gradient (diff_dst and the weight reordered), then the weight
// gradient (src and diff_dst reordered).
std::vector<HiddenAction> convBackward(const trace::Trace& t, const trace::Node& n, int threads) {
  const ConvArgs a{4, 6, 7, 9};
  if (!usesMkldnn(t, n, 1, 2, a, threads)) return {};
  auto defined = [&](size_t i) {
    return i < n.outputs.size() && n.outputs[i].kind == ValueKind::kTensor &&
           t.tensors[n.outputs[i].tensor].numel > 0;
  };
  const trace::TensorRef* dy = tensorAt(t, n, 0);
  if (dy == nullptr) return {};
  const trace::TensorRef& in = *tensorAt(t, n, 1);
  const double weight = bytesOf(*tensorAt(t, n, 2));
  Script s;
  if (defined(0)) primitive(s, {bytesOf(*dy)}, weight, bytesOf(in), 0);
  if (defined(1)) {
    std::vector<double> ops;
    if (reordersSource(t, in)) ops.push_back(bytesOf(in));
    ops.push_back(bytesOf(*dy));
    primitive(s, ops, 0, weight, 1);
  }
  return s.take();
}

}  // namespace

std::vector<HiddenAction> hiddenBuffers(const trace::Trace& t, const trace::Node& n, int threads) {
  const std::string_view name = t.name(n);
  if (name == "aten::conv1d" || name == "aten::conv2d" || name == "aten::conv3d") {
    return convForward(t, n, ConvArgs{}, threads);
  }
  if (name == "aten::convolution" || name == "aten::_convolution") {
    return convForward(t, n, ConvArgs{3, 5, 6, 8}, threads);
  }
  if (name == "aten::mkldnn_convolution") {  // (input, weight, bias, padding, stride, ...)
    return convForward(t, n, ConvArgs{4, 5, 0, 6, true}, threads);
  }
  if (name == "aten::convolution_backward") return convBackward(t, n, threads);
  return {};
}

}  // namespace etb::predict
