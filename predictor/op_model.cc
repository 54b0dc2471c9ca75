// SPDX-License-Identifier: MIT
#include "predictor/op_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "predictor/heap_model.h"
#include "predictor/op_shapes.h"
#include "replayer/arg_decoder.h"

namespace etb::predict {
namespace {

double lg(double x) { return std::log2(std::max(x, 1.0)); }

// The largest plane size P with every size 1..P in the batch norm table.
double smallPlanesEnd(const HwProfile::BatchNormPlanes& table) {
  double end = 0;
  for (const SizePoint& q : table.per_plane) {
    if (q.bytes != end + 1) break;
    end = q.bytes;
  }
  return end;
}

// log(FLOPs per microsecond) of a measured GEMM / conv.
double logRate(double flops, double us) { return std::log(flops / std::max(us, 1e-3)); }

// An m x k by k x n GEMM's kernel time at the rate its nearest points read
// (no dispatcher's call under it).
double gemmKernelUs(const std::vector<KnnPoint<3>>& points, double m, double n, double k) {
  return 2 * m * n * k / std::exp(knnValue(points, {lg(m), lg(n), lg(k)}));
}

// The kernel paths a CPU libtorch takes: 0 a 1x1 window (the native
// per-sample GEMM at small batches on one thread), 1 another dense window,
// 2 depthwise (one channel a group), 3 grouped with several channels a group
// (ResNeXt's and RegNet's 3x3s, ShuffleNet's and MobileNet's grouped 1x1s).
size_t convClass(const ConvShape& s) {
  if (s.groups > 1) return s.k > s.window ? 3 : 2;
  return s.window > 1 ? 1 : 0;
}

// Whether libtorch's CPU convolution runs the native path (slow_conv2d: one
// GEMM of the weight by each sample's pixels) rather than oneDNN: for a
// float32 1x1, stride-1, ungrouped convolution of fewer than 16 samples on
// one thread (ConvParams::use_mkldnn in libtorch 1.13 to 2.x: "for 1x1
// filters, MKLDNN is faster than THNN when multi-threaded, but THNN is
// faster when single-threaded"). Such a call is that many GEMMs, and a
// GEMM of a large weight by one to four pixels (ResNet-50's and ResNeXt's
// 1024 -> 2048 projections on 1 x 1 maps at a 32 x 32 input) runs at a
// fraction of any convolution's rate in the profile's grid: the grid's
// nearest 1x1 points predicted those at 0.2-0.6x of their replayed times.
bool nativeGemmConv(const ConvShape& s, const std::string& dtype, int threads) {
  return s.valid && !s.transposed && s.window == 1 && s.stride == 1 && s.groups == 1 && s.batch < 16 &&
         threads == 1 && dtype == "float32";
}

std::array<double, 6> convFeatures(const ConvShape& s) {
  return {lg(s.batch), lg(s.m / s.batch), lg(s.n), lg(s.k), lg(s.stride), lg(s.groups)};
}

const std::set<std::string> kGemm = {"mm", "addmm", "matmul", "linear", "_addmm_activation",
                                     "bmm", "baddbmm", "mv", "addmv"};
const std::set<std::string> kConv = {"convolution", "_convolution", "conv2d", "conv1d",
                                     "mkldnn_convolution", "_convolution_mode", "thnn_conv2d",
                                     "_slow_conv2d_forward", "slow_conv_dilated2d"};
const std::set<std::string> kEmbFwd = {"embedding_bag", "_embedding_bag", "embedding",
                                       "_embedding_bag_forward_only"};
const std::set<std::string> kEmbBwd = {"_embedding_bag_backward", "_embedding_bag_dense_backward",
                                       "embedding_backward", "embedding_dense_backward"};
const std::set<std::string> kView = {
    "view", "_unsafe_view", "_reshape_alias", "t", "transpose", "permute", "expand",
    "expand_as", "select", "slice", "narrow", "as_strided", "unsqueeze", "squeeze", "detach",
    "alias", "unbind", "split", "split_with_sizes", "chunk", "flatten", "unflatten", "view_as",
    "numel", "size", "stride", "is_contiguous", "lift_fresh", "empty", "empty_like",
    "empty_strided", "new_empty", "new_empty_strided", "set_", "resize_", "record_stream",
    // in place, but on the tensor's metadata only: no element is read or written
    "detach_", "squeeze_", "unsqueeze_", "t_", "transpose_", "as_strided_"};
// Ops that read one element to the host (item, if x:, a Python number).
const std::set<std::string> kScalarRead = {"item", "_local_scalar_dense", "is_nonzero"};
// Ops that are views when the output is the input tensor, copies otherwise
// (resolve_conj / resolve_neg copy only a tensor whose conjugate or negative
// bit is set).
const std::set<std::string> kMaybeCopy = {"reshape", "contiguous", "to", "_to_copy", "type_as",
                                          "resolve_conj", "resolve_neg"};
// Ops with a vectorised special function or an element loop of their own:
// each has its own measured curve ("op:NAME", et_profile_hw) since their
// costs differ several-fold (tanh vs exp; masked_fill's scalar loop over a
// broadcast mask runs at a fraction of a copy's rate). Each lists the
// curves to read in order; a profile measured before a curve existed reads
// the next (the curve such ops read then).
const std::map<std::string, std::vector<std::string>> kSpecial = {
    {"tanh", {"op:tanh"}}, {"exp", {"op:exp"}}, {"sigmoid", {"op:sigmoid"}}, {"gelu", {"op:gelu"}},
    {"log", {"op:log"}}, {"erf", {"op:erf"}}, {"silu", {"op:silu"}}, {"_softmax", {"op:_softmax"}},
    {"softmax", {"op:_softmax"}}, {"_log_softmax", {"op:_log_softmax"}},
    {"log_softmax", {"op:_log_softmax"}}, {"logsigmoid", {"op:sigmoid"}}, {"elu", {"op:exp"}},
    {"softplus", {"op:exp"}}, {"mish", {"op:tanh"}},
    {"gelu_backward", {"op:gelu_backward", "op:gelu"}},
    // silu's gradient evaluates the sigmoid again: silu's curve over its
    // three tensors (EfficientNet's ran at 0.40x on the elementwise one).
    {"silu_backward", {"op:silu", "elementwise"}},
    {"_log_softmax_backward_data", {"op:_log_softmax_backward_data", "op:exp"}},
    {"_softmax_backward_data", {"op:_softmax_backward_data", "elementwise"}},
    {"masked_fill", {"op:masked_fill", "unary"}}, {"masked_fill_", {"op:masked_fill", "unary"}},
    {"where", {"op:where", "unary"}}};
// Plain arithmetic over one or two inputs (gradients of activations that
// reuse the forward's output, square roots): the elementwise or unary curve.
const std::set<std::string> kArithmetic = {
    "tanh_backward", "sigmoid_backward",
    "threshold_backward", "sqrt", "rsqrt", "pow", "reciprocal", "neg", "abs", "square",
    "clamp", "clamp_min", "clamp_max", "relu", "leaky_relu", "hardtanh", "sub", "rsub", "mul",
    "div", "add", "addcmul", "addcdiv", "lerp", "maximum", "minimum", "eq", "ne", "lt", "le",
    "gt", "ge", "sign", "floor", "ceil", "round", "trunc", "frac", "logical_not", "bitwise_not"};
const std::set<std::string> kNorm = {"native_layer_norm", "layer_norm", "group_norm",
                                     "native_group_norm", "native_layer_norm_backward",
                                     "native_group_norm_backward"};
// Batch norm has curves of its own (per-channel statistics over N x H x W);
// profiles without them read the norm curve.
const std::map<std::string, std::string> kBatchNorm = {
    {"native_batch_norm", "batchnorm"}, {"batch_norm", "batchnorm"},
    {"_batch_norm_impl_index", "batchnorm"}, {"_native_batch_norm_legit", "batchnorm"},
    {"native_batch_norm_backward", "batchnorm_backward"},
    {"_batch_norm_impl_index_backward", "batchnorm_backward"},
    // What batch_norm calls on a GPU (an H200's resnet18 backward read the
    // elementwise curve: 0.16x).
    {"cudnn_batch_norm", "batchnorm"}, {"miopen_batch_norm", "batchnorm"},
    {"cudnn_batch_norm_backward", "batchnorm_backward"},
    {"miopen_batch_norm_backward", "batchnorm_backward"}};
// (logsumexp is not one: it runs ten kernels - amax, a mask of the
// infinite maxima, sub, exp_, sum, log_, add_ - which a trace records as
// its children; priced as one pass it came out at 0.13x its replay.)
const std::set<std::string> kReduction = {"sum", "mean", "amax", "amin", "max", "min", "norm",
                                          "var", "std", "argmax", "argmin", "any", "all",
                                          "prod", "linalg_vector_norm"};
const std::set<std::string> kCopy = {"clone", "copy_", "cat", "stack", "index_select", "gather",
                                     "scatter", "scatter_add", "index", "index_put_", "repeat",
                                     "flip", "roll", "constant_pad_nd"};
// Random number generation (dropout masks, initialisers): the "rng" curve,
// over twice the output bytes (the in-place bernoulli_ it was measured with
// records self as input and output).
const std::set<std::string> kRng = {"bernoulli_", "bernoulli", "uniform_", "normal_", "random_",
                                    "exponential_", "geometric_", "cauchy_", "log_normal_",
                                    "rand", "randn", "rand_like", "randn_like", "randint",
                                    "randint_like", "normal", "multinomial", "randperm"};
// Write-only ops: one pass over the output.
const std::set<std::string> kFill = {"fill_", "zero_", "zeros", "ones", "full", "zeros_like",
                                     "ones_like", "full_like", "new_zeros", "new_ones"};

// The curve of an advanced index or put that picks elements (et_profile_hw's
// measureIndexing): integer index tensors in every position of self's dims,
// the last one included, so that the offset moves from element to element.
// A shorter index list leaves the trailing dims whole, copied as runs (the
// copy curve's rate), as do boolean masks (a nonzero pass first).
// Returns the curve and the bytes to read it at; null otherwise.
const char* elementIndexCurve(const std::string& name, const OpShapes& sh, double* bytes) {
  const bool put = name == "index_put_" || name == "index_put" || name == "_index_put_impl_";
  if (name != "index" && !put) return nullptr;
  const TensorFacts* self = sh.inputArg(0);
  if (!self || sh.args.size() < 2 || sh.args[1]->kind != trace::ValueKind::kList) return nullptr;
  const std::vector<trace::Value>& items = sh.args[1]->items;
  if (items.empty() || items.size() != self->shape.size()) return nullptr;
  const std::vector<TensorFacts>* list = nullptr;
  for (const std::vector<TensorFacts>& l : sh.in_lists) {
    if (!l.empty() && l.front().arg == 1) list = &l;
  }
  if (items.back().kind != trace::ValueKind::kTensor || list == nullptr || list->empty()) return nullptr;
  const TensorFacts& last = list->back();
  if ((last.dtype != trace::DType::kInt64 && last.dtype != trace::DType::kInt32) || last.numel <= 0) {
    return nullptr;
  }
  if (put) {
    const TensorFacts* values = sh.inputArg(2);
    if (!values) return nullptr;
    *bytes = 3 * values->bytes;
    return "op:index_put";
  }
  if (sh.out.empty()) return nullptr;
  *bytes = 2 * sh.out.front().bytes;
  return "op:index";
}
}  // namespace

std::string opKind(const trace::Trace& t, const trace::Node& node, std::string* overload) {
  std::string name, ov;
  if (!replay::detail::parseSchemaName(t.str(node.op_schema), &name, &ov)) name = std::string(t.name(node));
  if (overload) *overload = ov;
  return name;
}

OpModel::OpModel(const HwProfile& hw, std::string index_dist, std::string comm_backend)
    : hw_(hw), dist_(std::move(index_dist)), comm_(std::move(comm_backend)) {
  for (const GemmPoint& g : hw.gemm) {
    gemm_[g.dtype].push_back({{lg(g.m), lg(g.n), lg(g.k)}, logRate(2.0 * g.m * g.n * g.k, g.us)});
  }
  for (const GemmPoint& g : hw.gemm_nt) {
    gemm_nt_[g.dtype].push_back({{lg(g.m), lg(g.n), lg(g.k)}, logRate(2.0 * g.m * g.n * g.k, g.us)});
  }
  for (const GemmPoint& g : hw.bmm) {
    bmm_[g.dtype].push_back({{lg(g.b), lg(g.m), lg(g.n), lg(g.k)},
                             logRate(2.0 * g.b * g.m * g.n * g.k, g.us)});
  }
  for (const ConvPoint& c : hw.conv) {
    const ConvShape s = convShapeOf(c);
    const std::array<double, 6> x = convFeatures(s);
    ConvSets& sets = (c.transposed ? conv_transposed_ : conv_).try_emplace(c.dtype, emptyConvSets()).first->second;
    for (ConvRates& set : sets) {
      if (&set == &sets[1] && !c.hasChannelsLast()) continue;
      for (size_t d = 0; d < 3; ++d) set.rates[d].push_back({x, logRate(s.flops(), c.*set.times[d])});
      for (LeastConv* least : {&set.least, &set.class_least[convClass(s)]}) {
        if (least->flops == 0 || s.flops() < least->flops) *least = {c, s.flops()};
      }
      set.class_points[convClass(s)].push_back({c, s.flops()});
    }
  }
  const auto& planes = hw.batchnorm_backward_planes;
  bn_small_end_ = smallPlanesEnd(planes);
  for (const SizePoint& q : planes.per_plane) {
    if (q.bytes >= bn_small_end_) bn_ladders_[std::fmod(q.bytes, planes.vector_floats) == 0].push_back(q);
  }
  fitBatchNormForward();
  buildCurves();
  fitEmbedding();
  fitForeach();
  fitPerSampleGemm();
}

std::array<double, 3> OpModel::perSampleGemmUs(const ConvShape& s) const {
  const auto plain = gemm_.find("float32");
  if (plain == gemm_.end() || s.batch <= 0) return {};
  const auto nt = gemm_nt_.find("float32");
  // Kernel times alone (the native path calls BLAS itself); B transposed on
  // those points where measured.
  const auto us = [&](double m, double n, double k, bool b_transposed) {
    return gemmKernelUs(b_transposed && nt != gemm_nt_.end() ? nt->second : plain->second, m, n, k);
  };
  const double pixels = s.m / s.batch, in = s.k, out = s.n;
  // Forward, per sample: weight [out, in] x input [in, pixels]. Input
  // gradient, per sample: weight^T [in, out] x grad [out, pixels]. Weight
  // gradient: grad [out, pixels] x input^T [pixels, in] summed over the
  // samples, read as one GEMM over all their pixels: over the profile's
  // seventeen such points here it came within 0.79-1.83x of the calls (but
  // for two of 7 us), where a GEMM per sample came within 0.26-1.53x (eight
  // samples of 2 x 2 pixels: 776 us of GEMMs for a 199 us call).
  return {s.batch * us(out, pixels, in, false), s.batch * us(in, pixels, out, false), us(out, in, s.m, true)};
}

// A native-path call is its GEMMs and a little more (the loop over the
// samples, the output's allocation). Each direction's median ratio of the
// profile's own such points to their GEMMs scales the GEMMs to a call; over
// the seventeen points of a quick profile here the ratios ran 0.71-1.16
// forward, 0.90-1.74 for the input gradient.
void OpModel::fitPerSampleGemm() {
  const auto sets = conv_.find("float32");
  if (hw_.gpu() || sets == conv_.end()) return;
  for (ConvRates& set : sets->second) {
    std::array<std::vector<double>, 3> ratios;
    for (const LeastConv& p : set.class_points[0]) {
      const ConvShape s = convShapeOf(p.point);
      if (!nativeGemmConv(s, p.point.dtype, hw_.identity.threads)) continue;
      const std::array<double, 3> gemms = perSampleGemmUs(s);
      for (size_t d = 0; d < 3; ++d) {
        const double us = p.point.*set.times[d];
        if (us > 0 && gemms[d] > 0) ratios[d].push_back(us / gemms[d]);
      }
    }
    for (size_t d = 0; d < 3; ++d) {
      if (ratios[d].size() < 3) continue;
      const auto mid = ratios[d].begin() + static_cast<std::ptrdiff_t>(ratios[d].size() / 2);
      std::nth_element(ratios[d].begin(), mid, ratios[d].end());
      set.per_sample_gemm[d] = *mid;
    }
  }
}

void OpModel::fitForeach() {
  // A _foreach_ loop moves its lists' bytes like one in-place kernel over
  // all of them (the "inplace" curve: cache-resident totals stream far
  // faster than the largest lists measured) plus a cost per tensor, each
  // overload its own: us - curve = a + b * tensors, least squares relative
  // to each point's time (the largest lists would otherwise set the
  // per-tensor cost).
  const auto it = warm_.find("inplace");
  if (it == warm_.end()) return;
  std::map<std::string, std::vector<const ForeachPoint*>> by_op;
  for (const ForeachPoint& f : hw_.foreach_ops) by_op[f.op].push_back(&f);
  for (const auto& [op, points] : by_op) {
    double sw = 0, st = 0, stt = 0, sr = 0, str = 0;
    for (const ForeachPoint* f : points) {
      const double w = 1.0 / std::max(f->us * f->us, 1e-6);
      const double t = static_cast<double>(f->tensors);
      const double bytes = f->bytes > 0 ? f->bytes : 12.0 * static_cast<double>(f->elems);
      const double r = f->us - curveUs(it->second, bytes);
      sw += w;
      st += w * t;
      stt += w * t * t;
      sr += w * r;
      str += w * t * r;
    }
    const double det = sw * stt - st * st;
    if (points.size() < 2 || std::fabs(det) < 1e-300) continue;
    ForeachFit& fit = foreach_[op];
    fit.tensor = std::max((sw * str - st * sr) / det, 0.0);
    fit.base = std::max((sr - fit.tensor * st) / sw, 0.0);
  }
}

OpEstimate OpModel::estimate(const trace::Trace& t, const trace::Node& node, double cold,
                             double l3, uint32_t channels_last, uint32_t transposed) const {
  std::string name = opKind(t, node);
  if (name.rfind("aten::", 0) == 0) name = name.substr(6);
  OpShapes sh = opShapes(t, node);
  OpEstimate e = kernelEstimate(t, node, name, sh, cold, l3, channels_last, transposed);
  if (e.fallback) return e;
  const double extra = callExtraUs(name, sh);
  e.us += extra;
  e.fixed_us += extra;
  return e;
}

OpEstimate OpModel::kernelEstimate(const trace::Trace& t, const trace::Node& node, const std::string& name,
                                   OpShapes& sh, double cold, double l3, uint32_t channels_last,
                                   uint32_t transposed) const {
  for (TensorFacts& f : sh.in) {
    if (f.arg < 32 && (channels_last >> f.arg & 1u)) f.channels_last = true;
    if (f.arg < 32 && (transposed >> f.arg & 1u)) f.transposed = true;
  }
  if (kGemm.count(name)) {
    const GemmDims d = gemmDims(name, sh);
    if (d.valid) {
      const trace::DType dtype = sh.computeDType();
      std::string typed;
      bool nt = false;
      const double us = d.b > 1 && !bmm_.empty() ? bmmUs(d, dtype, &typed)
                                                 : gemmUs(d.b * d.m, d.n, d.k, dtype, &typed, d.b_transposed, &nt);
      return {us + biasCopyUs(name, sh), (nt ? "gemm_nt" : "gemm") + typed, false};
    }
  }
  if (auto attention = attentionEstimate(name, sh)) return *attention;
  if (kConv.count(name) || name == "convolution_backward") {
    std::string family = "conv";
    const double us = convUs(sh, name == "convolution_backward", &family);
    return {us + inputsFromAfarUs(sh, us, cold, l3), family, false};
  }
  if (kEmbFwd.count(name)) return {embeddingUs(sh, false, cold), "embedding_bag", false};
  if (kEmbBwd.count(name)) return {embeddingUs(sh, true, cold), "embedding_bag", false};
  if (name.rfind("_foreach_", 0) == 0) {
    std::string overload;
    const std::string op = opKind(t, node, &overload);
    return {foreachUs(overload.empty() ? op : op + "." + overload, sh, cold, l3), "foreach", false};
  }
  if (kView.count(name)) return {viewCallUs(name), "view", false};
  // A CPU tensor's value read on the host: a call and no kernel.
  if (kScalarRead.count(name) && !hw_.gpu() && hw_.call_us.count("aten::" + name)) {
    return {viewCallUs(name), "view", false};
  }
  if (auto pool = poolEstimate(name, sh)) return *pool;
  return memoryEstimate(name, sh, cold, l3);
}

std::optional<OpEstimate> OpModel::attentionEstimate(const std::string& name,
                                                    const OpShapes& sh) const {
  // The fused kernels behind scaled_dot_product_attention, by the layout of
  // their query: the _scaled_dot_product_* ops take [B, H, L, E], the
  // kernels they call ([B, L, H, E]) transposed views. A backward's query
  // follows grad_out. Their costs were the bytes of q, k, v and out on a
  // memory curve: transformer_big's on an H200 replayed at 205 us forward
  // and 467 backward against 4 predicted.
  static const std::map<std::string, bool> kHeadsFirst = {
      {"_scaled_dot_product_efficient_attention", true},
      {"_scaled_dot_product_flash_attention", true},
      {"_scaled_dot_product_flash_attention_for_cpu", true},
      {"_scaled_dot_product_cudnn_attention", true},
      {"_efficient_attention_forward", false},
      {"_flash_attention_forward", false}};
  const bool backward = name.size() > 9 && name.compare(name.size() - 9, 9, "_backward") == 0;
  std::string base = backward ? name.substr(0, name.size() - 9) : name;
  if (base == "_efficient_attention" || base == "_flash_attention") base += "_forward";
  const auto layout = kHeadsFirst.find(base);
  if (layout == kHeadsFirst.end() || bmm_.empty()) return std::nullopt;
  const size_t q_at = backward ? 1 : 0;
  const TensorFacts *q = sh.inputArg(q_at), *k = sh.inputArg(q_at + 1), *v = sh.inputArg(q_at + 2);
  if (q == nullptr || k == nullptr || v == nullptr || q->shape.size() != 4 || k->shape.size() != 4 ||
      v->shape.size() != 4) {
    return std::nullopt;
  }
  // [B, H, L, E] or [B, L, H, E]: heads, then sequence lengths and widths.
  const size_t seq = layout->second ? 2 : 1, heads = layout->second ? 1 : 2;
  const double b = static_cast<double>(q->shape[0] * q->shape[heads]);
  const double l = static_cast<double>(q->shape[seq]), e = static_cast<double>(q->shape[3]);
  const double s = static_cast<double>(k->shape[seq]), ev = static_cast<double>(v->shape[3]);
  const auto bmm = [&](double m, double n, double kk) { return bmmUs({true, b, m, n, kk}, q->dtype); };
  // Forward: scores Q K^T (L x S over E) and their product with V (L x Ev
  // over S); the softmax between them stays on chip. Backward: the scores
  // again, dP = dO V^T, dV = P^T dO, dQ = dS K and dK = dS^T Q.
  const double us = backward ? 2 * bmm(l, s, e) + bmm(s, ev, l) + bmm(l, e, s) + bmm(s, e, l)
                             : bmm(l, s, e) + bmm(l, ev, s);
  return OpEstimate{us, "attention", false};
}

std::optional<OpEstimate> OpModel::poolEstimate(const std::string& name, const OpShapes& sh) const {
  // (curve's op, argument holding kernel_size) by the op et_replay calls;
  // max_pool2d without grad and max_pool2d_with_indices run one kernel.
  static const std::map<std::string, std::pair<std::string, size_t>> kPool = {
      {"max_pool2d", {"max_pool2d", 1}}, {"max_pool2d_with_indices", {"max_pool2d", 1}},
      {"avg_pool2d", {"avg_pool2d", 1}}, {"avg_pool2d_backward", {"avg_pool2d_backward", 2}},
      {"max_pool2d_with_indices_backward", {"max_pool2d_backward", 2}}};
  const auto op = kPool.find(name);
  if (op == kPool.end()) return std::nullopt;
  // A forward reads self and writes its output; a backward reads
  // (grad_output, self, kernel_size, ...).
  const bool forward = op->second.second == 1;
  const TensorFacts* in = sh.inputArg(forward ? 0 : 1);
  const TensorFacts* out = forward ? (sh.out.empty() ? nullptr : &sh.out[0]) : sh.inputArg(0);
  if (in == nullptr || out == nullptr) return std::nullopt;
  if (op->second.first == "max_pool2d_backward") {
    const auto curve = warm_.find(poolCurve("max_pool2d_backward", 0));
    if (curve == warm_.end()) return std::nullopt;
    return OpEstimate{std::max(curveUs(curve->second, 4 * (in->numel + out->numel)), hw_.dispatch_us),
                      "pool", false};
  }
  const auto small = warm_.find(poolCurve(op->second.first, kPoolWindows[0]));
  const auto large = warm_.find(poolCurve(op->second.first, kPoolWindows[1]));
  if (small == warm_.end() || large == warm_.end()) return std::nullopt;
  // The window: kernel_size's elements (one int: a square); without it the
  // input's elements per output (a window as large as its stride).
  double window = out->numel > 0 ? in->numel / out->numel : 1;
  const size_t at = op->second.second;
  if (at < sh.args.size() && sh.args[at]->kind == trace::ValueKind::kList &&
      !sh.args[at]->items.empty() && sh.args[at]->items[0].kind == trace::ValueKind::kInt) {
    const auto& k = sh.args[at]->items;
    const double kh = static_cast<double>(k[0].i);
    window = kh * (k.size() > 1 && k[1].kind == trace::ValueKind::kInt ? static_cast<double>(k[1].i) : kh);
  }
  // A line per output element through the two measured windows.
  const double x = 4 * out->numel;
  const double w0 = static_cast<double>(kPoolWindows[0] * kPoolWindows[0]);
  const double w1 = static_cast<double>(kPoolWindows[1] * kPoolWindows[1]);
  const double t0 = curveUs(small->second, x), t1 = curveUs(large->second, x);
  const double us = t0 + (t1 - t0) * (window - w0) / (w1 - w0);
  return OpEstimate{std::max({us, 0.25 * t0, hw_.dispatch_us}), "pool", false};
}

// Memory-bound ops: bytes moved over the curve of their class.
OpEstimate OpModel::memoryEstimate(const std::string& name, const OpShapes& sh, double cold,
                                   double l3) const {
  double out = 0;
  for (const TensorFacts& f : sh.out) out += f.bytes;
  if (kMaybeCopy.count(name)) {
    if (sh.outputSameAsInput()) return {viewCallUs(name), "view", false};
    return {memoryUs("copy", sh.bytes(), cold, l3), "memory:copy", false};
  }
  if (kRng.count(name)) return {memoryUs(rngClass(sh), 2 * out), "memory:rng", false};
  // An in-place form (hardtanh_ as ReLU6, silu_, sigmoid_) runs the same
  // kernel over the same bytes as its out-of-place one, and reads its
  // curve: on the in-place add's curve EfficientNet's silu_ came out at
  // 0.19x.
  const std::string base = name.size() > 1 && name.back() == '_' && sh.outputSameAsInput()
                               ? name.substr(0, name.size() - 1)
                               : name;
  // The long tail's own curves where the profile measured them; an older
  // profile reads the classes below (elu and softplus on exp's curve).
  if (longTailOps().count(base)) {
    const std::string curve = "op:" + base;
    if (warm_.count(curve)) return {memoryUs(curve, sh.bytes(), cold, l3), "memory:" + curve, false};
  }
  auto sp = kSpecial.find(name);
  if (sp == kSpecial.end()) sp = kSpecial.find(base);
  if (sp != kSpecial.end()) {
    if (auto rows = softmaxRowsEstimate(name, sp->second.front(), sh, cold, l3)) return *rows;
    std::string curve = "transcendental";
    for (const std::string& c : sp->second) {
      if (warm_.count(c)) {
        curve = c;
        break;
      }
    }
    return {memoryUs(curve, sh.bytes(), cold, l3), "memory:" + curve, false};
  }
  if (kNorm.count(name)) return {memoryUs("norm", sh.bytes(), cold, l3), "memory:norm", false};
  if (const auto bn = kBatchNorm.find(name); bn != kBatchNorm.end()) {
    const std::string curve = warm_.count(bn->second) ? bn->second : "norm";
    const double us = memoryUs(curve, sh.bytes(), cold, l3);
    if (bn->second != "batchnorm_backward") {
      // A training forward costs at least its four parts, plus what
      // reading the inputs from afar adds on the curve.
      const double parts = batchNormForwardUs(name, sh);
      if (parts <= 0) return {us, "memory:" + curve, false};
      return {std::max(us, parts + us - memoryUs(curve, sh.bytes())), "memory:" + curve, false};
    }
    // Small planes cost their loop's overhead, which the bytes leave out:
    // at least the planes at the measured time per plane of their size,
    // plus what reading the inputs from afar adds on the curve.
    const double floor = batchNormPlanesUs(sh);
    if (floor <= 0) return {us, "memory:" + curve, false};
    const double from_afar = us - memoryUs(curve, sh.bytes());
    return {std::max(us, floor + from_afar), "memory:" + curve, false};
  }
  if (kReduction.count(name)) return reductionEstimate(sh, cold, l3);
  // Contiguous copies stream like a unary kernel; the "copy" curve (a
  // transposed source) is for contiguous() calls that had to copy.
  if (auto sums = indexSumEstimate(name, sh, cold, l3)) return *sums;
  double picked = 0;
  if (const char* curve = elementIndexCurve(name, sh, &picked); curve && warm_.count(curve)) {
    return {memoryUs(curve, picked, cold, l3), std::string("memory:") + curve, false};
  }
  if (kCopy.count(name)) return {memoryUs("unary", sh.bytes(), cold, l3), "memory:copy", false};
  if (kFill.count(name)) {
    // Profiles before the fill curve had a cold side take half the unary
    // kernel's read + write.
    const double us = warm_.count("fill@cold") ? memoryUs("fill", out, cold, l3)
                                               : memoryUs("unary", 2 * out, cold, l3) / 2;
    return {us, "memory:fill", false};
  }
  // In place (add_, mul_, ...): nothing allocated, so no page faults.
  double copied = 0;
  const double cast = castInputsUs(sh, &copied);
  if (name.back() == '_' && sh.outputSameAsInput() && hw_.bandwidth.count("inplace")) {
    return {memoryUs("inplace", sh.bytes(), cold, l3) + cast + copied, "memory:inplace", false, cast};
  }
  const std::string cls = sh.tensorInputs() >= 2 ? "elementwise" : "unary";
  // Anything else is a fallback: an op of unknown cost; the caller prefers
  // its children's sum.
  return {memoryUs(cls, sh.bytes(), cold, l3) + cast + copied, "memory:" + cls,
          kArithmetic.count(name) == 0, cast};
}

// A call that runs no kernel: the profile's own boxed call of the op where
// it timed one (HwProfile::call_us), else of aten::view.
double OpModel::viewCallUs(const std::string& name) const {
  const auto it = hw_.call_us.find("aten::" + name);
  return it == hw_.call_us.end() ? hw_.view_us : it->second;
}

// What an op's call costs beyond the kernel its model prices, on a CPU
// (HwProfile::call_extra_us: addmm and linear over their product's mm,
// mean over sum, zeros over zero_, ...): a linear without a bias goes
// through matmul, its own entry.
double OpModel::callExtraUs(const std::string& name, const OpShapes& sh) const {
  if (hw_.gpu() || hw_.call_extra_us.empty()) return 0;
  std::string key = "aten::" + name;
  if (name == "linear") {
    const TensorFacts* b = sh.inputArg(2);
    if (b == nullptr || b->numel <= 0) key += ":nobias";
  }
  const auto it = hw_.call_extra_us.find(key);
  return it == hw_.call_extra_us.end() ? 0 : it->second;
}

// The bias a GEMM op broadcasts into its output before the product (addmm,
// linear with a bias), for an output larger than call_extra_us's probe's,
// on the unary curve: the probe's own is in its entry.
double OpModel::biasCopyUs(const std::string& name, const OpShapes& sh) const {
  if (hw_.gpu() || hw_.call_extra_us.empty() || sh.out.empty()) return 0;
  if (name == "linear") {
    const TensorFacts* b = sh.inputArg(2);
    if (b == nullptr || b->numel <= 0) return 0;
  } else if (name != "addmm" && name != "_addmm_activation") {
    return 0;
  }
  const double probe = 4.0 * HwProfile::kGemmCallM * HwProfile::kGemmCallN;
  return std::max(0.0, memoryUs("unary", 2 * sh.out.front().bytes) - memoryUs("unary", 2 * probe));
}

// TensorIterator converts an input of another type than the op computes
// in with a .to() of its own before the kernel (a Python scalar the trace
// records as a 0-dim double or long tensor, as p.mul_(0.9) passes it, or a
// float tensor plus a long one): a call of HwProfile::cast_input_us each,
// returned, and for a tensor with dimensions the copy of its bytes on the
// unary curve (`copied`). The type computed in is the first input's with
// dimensions (a 0-dim one does not promote them), else the first's. Over
// thirty small models' replays here a float mul_ by a 0-dim double took
// 3.2 us, by a float tensor 1.2.
double OpModel::castInputsUs(const OpShapes& sh, double* copied) const {
  *copied = 0;
  if (hw_.cast_input_us <= 0 || sh.in.size() < 2) return 0;
  trace::DType common = sh.in.front().dtype;
  for (const TensorFacts& f : sh.in) {
    if (!f.shape.empty()) {
      common = f.dtype;
      break;
    }
  }
  if (common == trace::DType::kUnknown) return 0;
  double us = 0;
  for (const TensorFacts& f : sh.in) {
    if (f.dtype == trace::DType::kUnknown || f.dtype == common) continue;
    us += hw_.cast_input_us;
    if (!f.shape.empty()) *copied += memoryUs("unary", 2 * f.bytes);
  }
  return us;
}

// Sums by index: index_add_ (self, dim, index, source) reads the
// op:index_add:rows:R curves at the source's bytes, log-linear in log R
// between the two nearest measured slices (clamped beyond them), R the
// source's elements per index; scatter_add_ (self, dim, index, src) its
// curve over three times the source's bytes. Profiles without the curves:
// nothing (the caller's in-place or copy curve).
std::optional<OpEstimate> OpModel::indexSumEstimate(const std::string& name, const OpShapes& sh,
                                                    double cold, double l3) const {
  const TensorFacts* source = sh.inputArg(3);
  const TensorFacts* index = sh.inputArg(2);
  if (!source || !index || sh.args.size() < 2 || sh.args[1]->kind != trace::ValueKind::kInt) {
    return std::nullopt;
  }
  if (name == "scatter_add_" || name == "scatter_add") {
    if (!warm_.count("op:scatter_add")) return std::nullopt;
    return OpEstimate{memoryUs("op:scatter_add", 3 * source->bytes, cold, l3), "memory:op:scatter_add", false};
  }
  if (name != "index_add_" && name != "index_add") return std::nullopt;
  std::vector<std::pair<double, std::string>> at;  // slice elements, curve
  for (const int64_t r : kIndexAddRows) {
    if (warm_.count(rowsCurve("op:index_add", r))) at.emplace_back(static_cast<double>(r), rowsCurve("op:index_add", r));
  }
  if (at.empty() || index->numel <= 0) return std::nullopt;
  const double slice = std::max(1.0, source->numel / index->numel);
  return OpEstimate{lengthCurvesUs(at, slice, source->bytes, cold, l3), "memory:op:index_add:rows", false};
}

double OpModel::inputsFromAfarUs(const OpShapes& sh, double op_us, double cold, double l3) const {
  if (hw_.gpu() || op_us <= 0 || (cold <= 0 && l3 <= 0)) return 0;
  double in = 0;
  for (const TensorFacts& f : sh.in) in += f.bytes;
  // The unary curves' bytes are a read and a write of the same size.
  const double extra = cold * coldExtraUs("unary", 2 * in) + l3 * l3ExtraUs("unary", 2 * in);
  // As much of it as the op is data movement: the arithmetic of a large
  // conv hides its inputs' fetch (resnet18's 3x3 layers: streaming their
  // inputs is 2% of the call), a small one with large weights waits for it
  // (EfficientNet-B0's 1x1 1152 -> 192 projections on 2x2 maps, 0.9 MB of
  // weights: 236 us in a hot loop, 404 in a replay).
  const auto unary = warm_.find("unary");
  const double moving = unary == warm_.end() ? 0 : curveUs(unary->second, 2 * in);
  return extra * std::min(1.0, moving / op_us);
}

namespace {
std::array<double, 4> batchNormForwardFeatures(double n, double c, double plane) {
  return {1.0, c, plane > 1 ? n * c : 0.0, n * c * plane};
}
}  // namespace

// Least squares on relative error (each point weighted by 1 / its time:
// the small calls are what the floor is for), the parts held at zero or
// above: a part that comes out negative is left out and the rest fitted
// again.
void OpModel::fitBatchNormForward() {
  const auto& pts = hw_.batchnorm_forward;
  std::array<bool, 4> used{true, true, true, true};
  for (int round = 0; round < 4; ++round) {
    std::vector<size_t> cols;
    for (size_t k = 0; k < 4; ++k) {
      if (used[k]) cols.push_back(k);
    }
    const size_t m = cols.size();
    if (m == 0 || pts.size() < m) return;
    // Normal equations A x = b over the used columns, augmented [A | b].
    std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
    for (const auto& p : pts) {
      const std::array<double, 4> f = batchNormForwardFeatures(p.n, p.c, p.plane);
      for (size_t i = 0; i < m; ++i) {
        for (size_t j = 0; j < m; ++j) a[i][j] += f[cols[i]] * f[cols[j]] / (p.us * p.us);
        a[i][m] += f[cols[i]] / p.us;
      }
    }
    for (size_t i = 0; i < m; ++i) {  // Gauss-Jordan with partial pivoting
      size_t piv = i;
      for (size_t r = i + 1; r < m; ++r) {
        if (std::fabs(a[r][i]) > std::fabs(a[piv][i])) piv = r;
      }
      if (std::fabs(a[piv][i]) < 1e-300) return;  // the shapes cannot set the parts apart
      std::swap(a[i], a[piv]);
      for (size_t r = 0; r < m; ++r) {
        if (r == i) continue;
        const double q = a[r][i] / a[i][i];
        for (size_t col = i; col <= m; ++col) a[r][col] -= q * a[i][col];
      }
    }
    bool negative = false;
    std::array<double, 4> coef{};
    for (size_t i = 0; i < m; ++i) {
      coef[cols[i]] = a[i][m] / a[i][i];
      if (coef[cols[i]] < 0) {
        used[cols[i]] = false;
        negative = true;
      }
    }
    if (!negative) {
      bn_forward_ = coef;
      bn_forward_fitted_ = true;
      return;
    }
  }
}

double OpModel::batchNormForwardUs(const std::string& name, const OpShapes& sh) const {
  if (!bn_forward_fitted_) return 0;
  const TensorFacts* x = sh.inputArg(0);
  if (!x || x->shape.size() < 2 || x->channels_last) return 0;
  // training: argument 5 of batch_norm, native_batch_norm and
  // _native_batch_norm_legit (input, weight, bias, running_mean,
  // running_var, training, ...), 3 of the latter's no_stats overload.
  bool training = false;
  for (const size_t at : {size_t{5}, size_t{3}}) {
    if (sh.args.size() > at && sh.args[at] && sh.args[at]->kind == trace::ValueKind::kBool) {
      training = sh.args[at]->b;
      break;
    }
  }
  if (!training || name.rfind("cudnn", 0) == 0 || name.rfind("miopen", 0) == 0) return 0;
  const double n = static_cast<double>(x->shape[0]), c = static_cast<double>(x->shape[1]);
  double plane = 1;
  for (size_t i = 2; i < x->shape.size(); ++i) plane *= static_cast<double>(x->shape[i]);
  const std::array<double, 4> f = batchNormForwardFeatures(n, c, plane);
  double us = 0;
  for (size_t k = 0; k < 4; ++k) us += bn_forward_[k] * f[k];
  return us;
}

double OpModel::batchNormPlanesUs(const OpShapes& sh) const {
  const auto& table = hw_.batchnorm_backward_planes;
  const TensorFacts* x = sh.inputArg(1);  // (grad_out, input, weight, ...)
  if (table.per_plane.empty() || !x || x->shape.size() < 2) return 0;
  const double planes = static_cast<double>(x->shape[0] * x->shape[1]);
  double plane = 1;
  for (size_t i = 2; i < x->shape.size(); ++i) plane *= static_cast<double>(x->shape[i]);
  if (planes <= 0 || plane <= 0) return 0;
  // Sizes up to the table's small ones exactly; beyond, the ladder of the
  // sizes the vector width divides or of those it does not, whichever the
  // plane is on (between rungs log-log, proportional past the last).
  if (plane <= bn_small_end_) {
    for (const SizePoint& q : table.per_plane) {
      if (q.bytes == plane) return planes * q.us;
    }
  }
  const std::vector<SizePoint>& ladder = bn_ladders_[std::fmod(plane, table.vector_floats) == 0];
  if (ladder.empty()) return 0;
  return planes * curveUs(ladder, plane);
}

namespace {
// The points of `dtype`, else float32's (unknown or unmeasured types);
// `typed` (optional): ":<type>" when a reduced-precision type's were read,
// else empty (the suffix of the report's model family).
template <typename Points>
const Points* pointsOf(const std::map<std::string, Points>& by_type, trace::DType dtype,
                       std::string* typed) {
  const std::string name(trace::dtypeName(dtype));
  auto it = by_type.find(name);
  if (typed) *typed = it != by_type.end() && name != "float32" ? ":" + name : "";
  if (it == by_type.end()) it = by_type.find("float32");
  return it == by_type.end() ? nullptr : &it->second;
}
}  // namespace

double OpModel::gemmUs(double m, double n, double k, trace::DType dtype, std::string* typed,
                       bool b_transposed, bool* read_nt) const {
  const double flops = 2 * m * n * k;
  std::string type;
  const auto* points = pointsOf(gemm_, dtype, &type);
  if (typed) *typed = type;
  // B transposed reads the transposed points of the type the plain ones
  // came from (profiles before 2026-12-07 have float32's alone).
  std::string nt_type;
  const auto* nt_points = b_transposed ? pointsOf(gemm_nt_, dtype, &nt_type) : nullptr;
  const bool nt = nt_points != nullptr && nt_type == type;
  if (read_nt) *read_nt = nt;
  if (nt) points = nt_points;
  if (points == nullptr || flops <= 0) return hw_.dispatch_us;
  return std::max(gemmKernelUs(*points, m, n, k), hw_.dispatch_us);
}

double OpModel::bmmUs(const GemmDims& d, trace::DType dtype, std::string* typed) const {
  const double flops = 2 * d.b * d.m * d.n * d.k;
  const auto* points = pointsOf(bmm_, dtype, typed);
  if (points == nullptr) return hw_.dispatch_us;
  return std::max(flops / std::exp(knnValue(*points, {lg(d.b), lg(d.m), lg(d.n), lg(d.k)})),
                  hw_.dispatch_us);
}

double OpModel::convUs(const OpShapes& sh, bool backward, std::string* family) const {
  const ConvShape c = convShapeOf(sh, backward);
  std::string typed;
  // A transposed convolution reads the transposed points where measured.
  const bool own = c.transposed && !conv_transposed_.empty();
  const ConvSets* sets = pointsOf(own ? conv_transposed_ : conv_, sh.computeDType(), &typed);
  if (!c.valid || sets == nullptr || (*sets)[0].rates[0].empty()) return memoryUs("unary", sh.bytes());
  // oneDNN runs a channels-last kernel when the input or the weight is
  // channels-last (a backward's input is argument 1).
  const size_t first = backward ? 1 : 0;
  bool nhwc = false;
  for (size_t a : {first, first + 1}) {
    const TensorFacts* f = sh.inputArg(a);
    nhwc = nhwc || (f && f->channels_last);
  }
  const ConvRates& set = (*sets)[nhwc && !(*sets)[1].rates[0].empty() ? 1 : 0];
  if (family) *family = (&set == &(*sets)[1] ? "conv:channels_last" : own ? "conv:transposed" : "conv") + typed;
  const std::array<double, 6> x = convFeatures(c);
  const bool native = nativeGemmConv(c, std::string(trace::dtypeName(sh.computeDType())), hw_.identity.threads);
  bool by_gemm = false;  // a direction's time is its GEMMs'
  // A call with fewer FLOPs than the smallest measured of its kernel path
  // (or than the smallest measured conv, where the profile has none of its
  // path) costs at least what that one did (a 1x1 conv on 1x1 maps: 7-11 us
  // here; the rate alone predicted 2 us for a U-Net's 1x1 convs that
  // replayed at 8-27; its dense 3x3s on 8x8 maps pay oneDNN's 30-40). Not
  // the smallest of another path: a quick profile's smallest conv is a
  // depthwise 3x3 (14 kFLOP, 104 us backward), and squeeze-excite 1x1s of
  // 3 kFLOP on 1 x 1 maps, replayed at 14-33 us backward, were priced at
  // 150 from it.
  const LeastConv& own_least = set.class_least[convClass(c)];
  const LeastConv& least = own_least.flops > 0 ? own_least : set.least;
  // The native path's GEMMs in each direction, looked up once for the call.
  const std::array<double, 3> gemms = native ? perSampleGemmUs(c) : std::array<double, 3>{};
  const auto at = [&](size_t d) {
    double floor = 0;
    if (least.flops > 0 && c.flops() < least.flops) floor = least.point.*set.times[d];
    // Nor less than the fastest of its class with as many FLOPs or more:
    // below some size a call's time is its fixed cost, and the rates of
    // larger neighbours put it far under (a depthwise 3x3 on 2 x 48 x 4 x 4
    // took 29 us hot, as its class's points from 14 to 295 kFLOP did, and
    // the rate read 12.6).
    // A transposed convolution's kernels are not the forward grid's: none
    // from those, its own points' where measured.
    double larger = 0;
    if (!c.transposed || own) {
      for (const LeastConv& p : set.class_points[convClass(c)]) {
        const double us = p.point.*set.times[d];
        if (p.flops >= c.flops() && us > 0 && (larger == 0 || us < larger)) larger = us;
      }
    }
    floor = std::max(floor, larger);
    const double knn = std::max(c.flops() / std::exp(knnValue(set.rates[d], x)), floor);
    // On libtorch's native path a call costs at least its GEMMs (at the
    // profile's ratio): where no grid point is near, the rate of the
    // nearest ones reads far less for a large weight on a few pixels.
    // On the two networks that showed it, recorded fresh (ResNeXt-50
    // 32x4d and RegNetX-400MF at 32 x 32 inputs, 2026-12-07), their 1x1
    // forward calls went from 0.58 and 0.57 of their replayed times to 0.81
    // and 0.83, the backward from 0.54 and 0.78 to 0.89 and 1.25; models
    // whose 1x1 layers the grid covers (MNASNet, U-Net, ResNet-18) moved
    // 0-0.4%.
    if (set.per_sample_gemm[d] <= 0 || !native) return knn;
    const double gemm = set.per_sample_gemm[d] * gemms[d];
    if (gemm > knn) by_gemm = true;
    return std::max(knn, gemm);
  };
  // output_mask (input 10) says which of grad_input / grad_weight (+ bias)
  // are asked for; each half has its own measured rate.
  bool input = true, weight = true;
  if (backward && sh.args.size() > 10 && sh.args[10]->kind == trace::ValueKind::kList &&
      sh.args[10]->items.size() >= 2) {
    input = sh.args[10]->items[0].b;
    weight = sh.args[10]->items[1].b;
  }
  const double us = !backward ? at(0) : (input ? at(1) : 0) + (weight ? at(2) : 0);
  if (family && by_gemm) *family += ":gemm";
  return std::max(us, hw_.dispatch_us);
}

double OpModel::foreachUs(const std::string& op, const OpShapes& sh, double cold, double l3) const {
  if (sh.in_lists.empty()) return hw_.dispatch_us;
  // An overload not timed: one list and a number, or a number each
  // (_foreach_sub_.Scalar), costs like _foreach_mul_.Scalar; the rest like
  // _foreach_add_.List (all a profile before per-overload points had).
  auto fit = foreach_.find(op);
  const std::string overload = op.substr(op.rfind('.') + 1);
  if (fit == foreach_.end() && sh.in_lists.size() == 1 &&
      (overload == "Scalar" || overload == "ScalarList")) {
    fit = foreach_.find("aten::_foreach_mul_.Scalar");
  }
  if (fit == foreach_.end()) fit = foreach_.find(kForeachList);
  const ForeachFit f = fit == foreach_.end() ? ForeachFit{} : fit->second;
  const double tensors = static_cast<double>(sh.in_lists.front().size());
  return f.base + f.tensor * tensors + memoryUs("inplace", sh.bytes(), cold, l3);
}

std::string OpModel::rngClass(const OpShapes& sh) const {
  // bernoulli_(self, float p): the curve measured at the nearest p; other
  // samplers take p = 0.5's.
  double p = 0.5;
  if (sh.args.size() > 1 && sh.args[1]->kind == trace::ValueKind::kDouble) p = sh.args[1]->d;
  std::string best;
  double gap = 0;
  for (const double q : {0.1, 0.5, 0.9}) {
    if (!warm_.count(rngCurve(q))) continue;
    if (best.empty() || std::fabs(q - p) < gap) {
      best = rngCurve(q);
      gap = std::fabs(q - p);
    }
  }
  return best.empty() ? "unary" : best;
}

double OpModel::memoryUs(const std::string& cls, double bytes, double cold, double l3) const {
  auto it = warm_.find(cls);
  if (it == warm_.end()) it = warm_.find("unary");
  if (it == warm_.end()) return hw_.dispatch_us;
  const double us = curveUs(it->second, bytes) + cold * coldExtraUs(it->first, bytes) +
                    l3 * l3ExtraUs(it->first, bytes);
  // No floor at a tiny add's dispatch: the curves are boxed calls, and a
  // fill or an in-place op's smallest one (0.2 and 0.8 us) is below it.
  return us;
}

// What reading every input from DRAM adds to the warm time.
double OpModel::coldExtraUs(const std::string& cls, double bytes) const {
  const auto warm = warm_.find(cls), flushed = warm_.find(cls + "@cold");
  if (warm == warm_.end() || flushed == warm_.end()) return 0;
  // What the flush costs at the smallest size is code and dispatcher
  // state evicted with the data (a replay keeps those hot): only the
  // part of the gap that grows with the bytes is the data's.
  const double w = curveUs(warm->second, bytes), c = curveUs(flushed->second, bytes);
  const double w0 = warm->second.front().us, c0 = curveUs(flushed->second, warm->second.front().bytes);
  return std::max(0.0, (c - w) - (c0 - w0));
}

// What reading every input from the LLC instead of L2 adds to the warm
// time: the class's "@l3" curve less its warm one (a class measured without
// one, such as a special function, takes the unary kernel's extra time: the
// same bytes come from the same place). Beyond the largest rotated size the
// extra share of the warm time tapers to nothing at the LLC's size, where
// the hot loop itself no longer keeps its inputs in the caches.
double OpModel::l3ExtraUs(const std::string& cls, double bytes) const {
  std::string base = cls;
  if (!warm_.count(base + "@l3")) base = "unary";
  const auto warm = warm_.find(base), rot = warm_.find(base + "@l3");
  if (warm == warm_.end() || rot == warm_.end() || rot->second.empty()) return 0;
  const double last = rot->second.back().bytes;
  if (bytes <= last) return std::max(0.0, curveUs(rot->second, bytes) - curveUs(warm->second, bytes));
  const double llc = hw_.memory.llc_bytes;
  if (bytes >= llc || llc <= last) return 0;
  const double w_last = curveUs(warm->second, last);
  const double ratio = std::max(0.0, rot->second.back().us / std::max(w_last, 1e-9) - 1);
  const double taper = std::log(llc / bytes) / std::log(llc / last);
  return ratio * taper * curveUs(warm->second, bytes);
}

double OpModel::collectiveUs(const std::string& type, int group_size, double algo_bytes,
                             int* read_group) const {
  const auto it = collectives_.find(type);
  if (it == collectives_.end()) return -1;
  int best = 0;
  for (const auto& [size, curve] : it->second) {
    if (best == 0 || std::abs(size - group_size) < std::abs(best - group_size)) best = size;
  }
  if (read_group) *read_group = best;
  // Ring algorithms move (n-1)/n of the data per rank: rescale between sizes.
  const double scale = (group_size - 1.0) / group_size * best / (best - 1.0);
  return curveUs(it->second.at(best), algo_bytes) * (best == group_size ? 1.0 : scale);
}

void OpModel::buildCurves() {
  for (const CollectivePoint& c : hw_.collectives) {
    if (c.backend == comm_) collectives_[c.type][c.group_size].push_back({c.bytes, c.us});
  }
  const auto byBytes = [](const SizePoint& a, const SizePoint& b) { return a.bytes < b.bytes; };
  for (auto& [type, groups] : collectives_) {
    for (auto& [size, curve] : groups) std::sort(curve.begin(), curve.end(), byBytes);
  }
  // The microbenchmarks' outputs of kMmapMax and more were mapped afresh on
  // every call (glibc maps them whatever its threshold): take that first
  // touch out, the heap model adds it back where the replay pays it.
  const std::map<std::string, double> out_share = {
      {"elementwise", 1.0 / 3}, {"unary", 0.5}, {"transcendental", 0.5}, {"norm", 0.5},
      {"copy", 0.5}, {"batchnorm", 0.5}, {"batchnorm_backward", 1.0 / 3}};
  const double per_byte = hw_.memory.fault_us_per_page / hw_.memory.page_bytes;
  for (const auto& [cls, curve] : hw_.bandwidth) {
    std::vector<SizePoint>& warm = warm_[cls];
    const auto share = out_share.find(cls.substr(0, cls.find('@')));
    for (SizePoint p : curve) {
      const double out = share == out_share.end() ? 0 : p.bytes * share->second;
      if (out >= HeapModel::kMmapMax) p.us = std::max(p.us - out * per_byte, 0.25 * p.us);
      warm.push_back(p);
    }
    std::sort(warm.begin(), warm.end(), byBytes);
  }
}

}  // namespace etb::predict
