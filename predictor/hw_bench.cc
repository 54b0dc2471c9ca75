// SPDX-License-Identifier: MIT
#include "predictor/hw_bench.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/base/log.h"
#include "predictor/timing.h"
#include "replayer/timer.h"
#include "replayer/zipf.h"

namespace etb::predict {
namespace {

double timeOp(const char* name, const char* overload, const std::vector<c10::IValue>& args,
              const ProfileOptions& o) {
  return predict::timeOp(name, overload, args, o.quick);
}

// One boxed call, timed by medianCallUs in an unnamed loop (no cold-call
// probe: call_cold_us's median is over the kernels timed by name).
double boxedCallUs(const char* name, const char* overload, const std::vector<c10::IValue>& args,
                   const ProfileOptions& o) {
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  std::vector<c10::IValue> stack;
  return medianCallUs([&] {
    stack = args;
    op.callBoxed(stack);
  }, o.quick, kLongCallUs, "");
}

// What call `a` costs beyond call `b` (a microsecond or a few): the median
// of five differences of the two timed back to back, so that a drift of
// the host between them counts once rather than in full (two quick
// profiles here read linear's extra over its mm as 2.4 and 3.9 us from
// two medians taken apart; two paired ones 3.1 and 2.2).
double pairedExtraUs(const std::function<double()>& a, const std::function<double()>& b) {
  std::vector<double> diffs;
  for (int i = 0; i < 5; ++i) diffs.push_back(a() - b());
  return std::max(0.0, medianOf(diffs));
}

// HwProfile::call_us: the ops that run no kernel, each called boxed on a
// small tensor as a trace records them.
void measureCalls(const ProfileOptions& o, HwProfile& hw) {
  const at::TensorOptions f = tensorsOn(o);
  const at::Tensor m = at::ones({4, 4}, f), v = at::ones({4}, f), col = at::ones({4, 1}, f);
  const at::Tensor s = at::ones({}, f);
  using Ints = std::vector<int64_t>;
  const c10::IValue none;
  const int64_t zero = 0, one = 1, two = 2;
  const struct {
    const char* name;
    const char* overload;
    std::vector<c10::IValue> args;
  } calls[] = {
      {"aten::view", "", {m, Ints{16}}},
      {"aten::_unsafe_view", "", {m, Ints{16}}},
      {"aten::_reshape_alias", "", {m, Ints{16}, Ints{1}}},
      {"aten::reshape", "", {m, Ints{16}}},
      {"aten::t", "", {m}},
      {"aten::transpose", "int", {m, zero, one}},
      {"aten::permute", "", {m, Ints{1, 0}}},
      {"aten::expand", "", {v, Ints{4, 4}, false}},
      {"aten::select", "int", {m, zero, one}},
      {"aten::slice", "Tensor", {m, zero, zero, two, one}},
      {"aten::narrow", "", {m, zero, zero, two}},
      {"aten::as_strided", "", {m, Ints{2, 2}, Ints{4, 1}, none}},
      {"aten::unsqueeze", "", {m, zero}},
      {"aten::squeeze", "dim", {col, one}},
      {"aten::flatten", "using_ints", {m, zero, int64_t{-1}}},
      {"aten::detach", "", {m}},
      {"aten::alias", "", {m}},
      {"aten::unbind", "int", {m, zero}},
      {"aten::split", "Tensor", {m, two, zero}},
      {"aten::chunk", "", {m, two, zero}},
      {"aten::empty", "memory_format", {Ints{16}, none, none, none, none, none}},
      {"aten::empty_like", "", {m, none, none, none, none, none}},
      {"aten::contiguous", "", {m, c10::IValue(c10::MemoryFormat::Contiguous)}},
      {"aten::to", "dtype", {m, c10::IValue(at::kFloat), false, false, none}},
      {"aten::item", "", {s}},
      {"aten::_local_scalar_dense", "", {s}},
      {"aten::is_nonzero", "", {s}},
  };
  // Unnamed loops (views have their own cold call, call_cold_view_us, and
  // these would outvote the kernels in call_cold_us's median); the median
  // of three, as a call under a microsecond moves with the host.
  for (const auto& c : calls) {
    try {
      std::vector<double> us;
      for (int i = 0; i < 3; ++i) us.push_back(boxedCallUs(c.name, c.overload, c.args, o));
      hw.call_us[c.name] = medianOf(us);
    } catch (const c10::Error& e) {
      if (o.progress) o.progress(std::string(c.name) + ": not timed (" + e.what_without_backtrace() + ")");
    }
  }
}

// HwProfile::call_extra_us beside the GEMMs': mean over the sum it runs
// first, and the factories that fill their output over zero_ (the fill
// curve's kernel) of a tensor of the same size.
void measureCallExtras(const ProfileOptions& o, HwProfile& hw) {
  const at::TensorOptions f = tensorsOn(o);
  const at::Tensor r = at::randn({32, 40}, f), x = at::ones({64}, f);
  const c10::IValue none;
  using Ints = std::vector<int64_t>;
  const Ints last{-1};
  hw.call_extra_us["aten::mean"] =
      pairedExtraUs([&] { return boxedCallUs("aten::mean", "dim", {r, last, false, none}, o); },
                    [&] { return boxedCallUs("aten::sum", "dim_IntList", {r, last, false, none}, o); });
  const auto zero = [&] { return boxedCallUs("aten::zero_", "", {x}, o); };
  const struct {
    const char* name;
    const char* overload;
    std::vector<c10::IValue> args;
  } factories[] = {
      {"aten::zeros", "", {Ints{64}, none, none, none, none}},
      {"aten::ones", "", {Ints{64}, none, none, none, none}},
      {"aten::full", "", {Ints{64}, c10::Scalar(2.0), none, none, none, none}},
      {"aten::zeros_like", "", {x, none, none, none, none, none}},
      {"aten::ones_like", "", {x, none, none, none, none, none}},
      {"aten::new_zeros", "", {x, Ints{64}, none, none, none, none}},
  };
  for (const auto& c : factories) {
    hw.call_extra_us[c.name] = pairedExtraUs([&] { return boxedCallUs(c.name, c.overload, c.args, o); }, zero);
  }
}

// A trivial op's and a view's boxed calls; on a CPU each a round of its
// figure (HwProfile::rounds).
void measureTrivialCalls(const ProfileOptions& o, HwProfile& hw) {
  const at::Tensor a = at::ones({1}, tensorsOn(o)), b = at::ones({1}, tensorsOn(o));
  const double add = timeOp("aten::add", "Tensor", {a, b, c10::Scalar(1)}, o);
  const at::Tensor m = at::ones({4, 4}, tensorsOn(o));
  const double view = timeOp("aten::view", "", {m, std::vector<int64_t>{16}}, o);
  hw.dispatch_us = onGpu(o) ? add : detail::addRound(hw, "dispatch_us", add);
  hw.view_us = onGpu(o) ? view : detail::addRound(hw, "view_us", view);
}

void measureDispatch(const ProfileOptions& o, HwProfile& hw) {
  measureTrivialCalls(o, hw);
  if (!onGpu(o)) {
    measureCalls(o, hw);
    measureCallExtras(o, hw);
  }
  // A mixed-type input's cast (HwProfile::cast_input_us; a host call's
  // cost, CPU profiles): multiplying by one leaves x as it was.
  if (onGpu(o)) return;
  const at::Tensor x = at::ones({64}, tensorsOn(o));
  const at::Tensor same = at::ones({}, tensorsOn(o)), other = at::ones({}, tensorsOn(o).dtype(at::kDouble));
  hw.cast_input_us = pairedExtraUs([&] { return boxedCallUs("aten::mul_", "Tensor", {x, other}, o); },
                                   [&] { return boxedCallUs("aten::mul_", "Tensor", {x, same}, o); });
}

// The element types the GEMM and conv points are measured in, by the names
// et_predict looks them up by (trace::dtypeName).
const std::pair<at::ScalarType, const char*> kTypes[] = {
    {at::kFloat, "float32"}, {at::kBFloat16, "bfloat16"}, {at::kHalf, "float16"}};

// Whether the device has a kernel for `call`'s type (CPU libtorch 1.13 has
// no float16 mm or convolution).
bool kernelRuns(const std::function<void()>& call) {
  try {
    call();
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}

// A reduced-precision point whose first call takes over kEmulatedUs and
// kEmulatedRatio times float32's of the same shape runs emulated: a CPU
// without native bfloat16 (an AMD EPYC with AVX2 alone) runs those kernels
// at a flat rate (oneDNN's bfloat16 conv at 4-6 GFLOP/s from a few MFLOPs
// up, a 1.85 GFLOP 3x3 layer 0.3 s forward and 1.1 s for the weight
// gradient). A quick profile leaves such points out: 25 shapes took 55 s of
// a 224 s quick profile, and the nearest measured points price the rest at
// that rate (resnet18 under bfloat16 autocast: 8.06 s predicted with them,
// 8.52 without, 9.70 replayed). A full profile times them once, contiguous
// only: in both layouts and three passes they kept one still in its conv
// section after 30 minutes. A CPU with native kernels (AMX, avx512_bf16)
// runs them faster than float32 and keeps every point as any other.
constexpr double kEmulatedUs = 30e3;
constexpr double kEmulatedRatio = 4;
bool runsEmulated(double us, double float32_us) {
  return float32_us > 0 && us > kEmulatedUs && us > kEmulatedRatio * float32_us;
}
bool emulatedLongCall(const ProfileOptions& o, at::ScalarType dtype, const std::function<void()>& call,
                      double float32_us) {
  if (onGpu(o) || dtype == at::kFloat || float32_us <= 0) return false;
  const double t0 = replay::nowUs();
  call();
  return runsEmulated(replay::nowUs() - t0, float32_us);
}

// The float32 time of the point of `points` with the same shape as `key`
// (`same` compares shapes), or 0 where none was measured.
template <typename Point, typename Same>
double float32TimeOf(const std::vector<Point>& points, const Same& same, double Point::*time) {
  for (const Point& p : points) {
    if (p.dtype == "float32" && same(p)) return p.*time;
  }
  return 0;
}

// In a full profile's later passes (measureComputeAgain, `first` the first
// pass's points, in the same order): the first pass's point `i` where it
// ran emulated, to keep as it is (at a flat rate another pass finds nothing
// faster, and each call takes a large share of a second); else null.
template <typename Point, typename Same>
const Point* emulatedBefore(const std::vector<Point>* first, size_t i, const Same& same, double Point::*time) {
  if (first == nullptr || i >= first->size() || (*first)[i].dtype == "float32") return nullptr;
  const Point& p = (*first)[i];
  return runsEmulated(p.*time, float32TimeOf(*first, same, time)) ? &p : nullptr;
}

// HwProfile::call_extra_us: addmm and linear against the mm of their product.
void measureGemmCalls(const ProfileOptions& o, HwProfile& hw) {
  const at::Tensor x = at::randn({HwProfile::kGemmCallM, HwProfile::kGemmCallK}, tensorsOn(o));
  const at::Tensor w = at::randn({HwProfile::kGemmCallN, HwProfile::kGemmCallK}, tensorsOn(o));
  const at::Tensor b = at::randn({HwProfile::kGemmCallN}, tensorsOn(o));
  const c10::Scalar one(1);
  const auto mm = [&] { return boxedCallUs("aten::mm", "", {x, w.t()}, o); };
  const struct {
    const char* key;
    const char* op;
    std::vector<c10::IValue> args;
  } calls[] = {{"aten::addmm", "aten::addmm", {b, x, w.t(), one, one}},
               {"aten::linear", "aten::linear", {x, w, b}},
               {"aten::linear:nobias", "aten::linear", {x, w, c10::IValue()}}};
  for (const auto& c : calls) {
    hw.call_extra_us[c.key] = pairedExtraUs([&] { return boxedCallUs(c.op, "", c.args, o); }, mm);
  }
}

// --quick measures the same float32 GEMM, BMM and conv shapes as a full profile, with
// a shorter sampling budget and no second pass: they take seconds of its two
// minutes, and a coarser grid misses where a BLAS runs fastest (on a Xeon
// with MKL no point of an 8x-spaced grid came within 25% of the rate of a
// 256x1024x1024 GEMM, and the mlp sample was predicted 50% over).
// `first`: in a full profile's later passes, the first pass's points (its
// emulated reduced-type ones are kept, not timed again); else null.
void measureGemmPass(const ProfileOptions& o, HwProfile& hw, const HwProfile* first) {
  // A GPU runs 8192 x 4096 x 4096 in milliseconds (a CPU core takes 50 ms
  // for 2e9): its grid reaches the layers of large training steps.
  // Its rate also moves more between neighbouring sizes (tiles and waves
  // over the SMs): twice as dense above 64.
  // On a CPU the grid starts at 1: a GEMM with a dimension of 1 (a
  // one-output head and its gradients, a batch of one) costs about as much
  // as one of 4, where the rate of 4 extrapolated priced it at a quarter
  // (DLRM's [512, 256] x [1, 256]^T and [512, 1] x [1, 256]: 71-75 us in a
  // hot loop and in the replay, 18 predicted; [1, 512] x [512, 256] 50 us, 11
  // predicted).
  std::vector<int64_t> dims{1, 4, 16, 64, 256, 1024, 4096};
  if (onGpu(o)) dims = {4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  const double cap = onGpu(o) ? 1.4e11 : 2e9;  // m*n*k: keeps each call under ~50 ms
  // The same grids again in each reduced-precision type: autocast's layers
  // run on other kernels. On this project's CPU VM (a Xeon with
  // avx512_bf16), oneDNN's bfloat16 mm of 256^3 took 222 us against
  // OpenBLAS's float32 570, and an addmm of 80 x 16 x 16 46 us against 4.3
  // (the primitive set up per call); a GPU's tensor cores run them at
  // several times float32's rate.
  for (const auto& [dtype, type] : kTypes) {
    const std::string name(type);
    const at::Tensor probe = at::ones({4, 4}, tensorsOn(o).dtype(dtype));
    if (!kernelRuns([&] { at::mm(probe, probe); })) {
      if (o.progress) o.progress("gemm " + name + ": no mm kernel on this device, not measured");
      continue;
    }
    const auto operand = [&](std::initializer_list<int64_t> sizes) {
      return at::randn(sizes, tensorsOn(o)).to(dtype);
    };
    // A quick CPU profile stops the reduced types' grid at 1024 (a third of
    // the shapes and half the time; the largest run at the rate of 1024's).
    std::vector<int64_t> grid = dims;
    if (o.quick && dtype != at::kFloat && !onGpu(o)) grid.pop_back();
    const size_t before = hw.gemm.size(), before_nt = hw.gemm_nt.size();
    // And B as nn.Linear's forward passes it: W.t() of a contiguous [n, k] W
    // (HwProfile::gemm_nt), in every type on a CPU: a BLAS packs such a B
    // otherwise, and without native bfloat16 kernels libtorch's own
    // bfloat16 GEMM ran it 2.4-3.3x as long as a contiguous B (an AMD EPYC:
    // 256x1024x1024 in 392 ms against 118; mlp under bfloat16 autocast came
    // out -48% with its linears priced on contiguous B). A GPU's BLAS takes
    // either layout in its kernels.
    const bool transposed_too = !onGpu(o);
    for (int64_t m : grid) {
      for (int64_t n : grid) {
        for (int64_t k : grid) {
          if (static_cast<double>(m) * n * k > cap) continue;
          const at::Tensor a = operand({m, k}), b = operand({k, n});
          const auto same = [&](const GemmPoint& g) { return g.m == m && g.n == n && g.k == k; };
          if (const GemmPoint* kept = emulatedBefore(first ? &first->gemm : nullptr, hw.gemm.size(), same,
                                                     &GemmPoint::us)) {
            hw.gemm.push_back(*kept);
            if (transposed_too) hw.gemm_nt.push_back(first->gemm_nt.at(hw.gemm_nt.size()));
            continue;
          }
          // Only a quick profile leaves such a point out; a full one's later
          // passes find it by its first-pass time (emulatedBefore).
          const double f32 = float32TimeOf(hw.gemm, same, &GemmPoint::us);
          if (o.quick && emulatedLongCall(o, dtype, [&] { at::mm(a, b); }, f32)) {
            continue;
          }
          hw.gemm.push_back({1, m, n, k, timeOp("aten::mm", "", {a, b}, o), name});
          if (!transposed_too) continue;
          const at::Tensor w = operand({n, k});
          hw.gemm_nt.push_back({1, m, n, k, timeOp("aten::mm", "", {a, w.t()}, o), name});
        }
      }
      if (o.progress) o.progress("gemm " + name + ": " + std::to_string(hw.gemm.size() - before) + " shapes");
    }
    if (transposed_too && o.progress) {
      o.progress("gemm " + name + ", B transposed: " + std::to_string(hw.gemm_nt.size() - before_nt) + " shapes");
    }
    if (transposed_too && dtype == at::kFloat) measureGemmCalls(o, hw);
    // Batched GEMMs from attention heads (few, wide) to pairwise
    // interactions (hundreds of tiny ones, as DLRM's).
    for (int64_t bt : {4, 32, 256}) {
      for (int64_t d : {8, 16, 64, 256}) {
        for (int64_t k : {8, 16, 64, 256}) {
          if (static_cast<double>(bt) * d * d * k > cap) continue;
          const at::Tensor a = operand({bt, d, k}), b = operand({bt, k, d});
          const auto same = [&](const GemmPoint& g) { return g.b == bt && g.m == d && g.k == k; };
          if (const GemmPoint* kept = emulatedBefore(first ? &first->bmm : nullptr, hw.bmm.size(), same,
                                                     &GemmPoint::us)) {
            hw.bmm.push_back(*kept);
            continue;
          }
          // Only a quick profile leaves such a point out; a full one's later
          // passes find it by its first-pass time (emulatedBefore).
          const double f32 = float32TimeOf(hw.bmm, same, &GemmPoint::us);
          if (o.quick && emulatedLongCall(o, dtype, [&] { at::bmm(a, b); }, f32)) {
            continue;
          }
          hw.bmm.push_back({bt, d, d, k, timeOp("aten::bmm", "", {a, b}, o), name});
        }
      }
    }
  }
}

// (n, c, hw, oc, k, stride): shapes of the kinds CNNs use, stem to head,
// then a grid of 3x3 layers over spatial size, width and stride: a
// convolution's rate depends on its spatial size beyond the implicit GEMM's
// m (small maps late in a network run far below the large ones) and drops
// for strided windows.
const int64_t kConvShapes[][6] = {
    {8, 3, 112, 64, 7, 2},  {8, 64, 28, 64, 3, 1},   {8, 64, 28, 128, 1, 2},
    {8, 128, 14, 128, 3, 1}, {8, 256, 7, 256, 3, 1},  {8, 256, 14, 512, 1, 2},
    {4, 16, 32, 32, 3, 1},  {16, 32, 16, 64, 3, 1},  {2, 8, 16, 16, 3, 1},
    {32, 64, 8, 64, 3, 1},  {8, 512, 7, 512, 3, 1},  {1, 32, 64, 32, 5, 1},
    {8, 32, 32, 32, 3, 1},  {8, 128, 32, 128, 3, 2}, {8, 32, 8, 32, 3, 1},
    {8, 128, 8, 128, 3, 1}, {8, 512, 2, 512, 3, 1},  {8, 128, 4, 128, 3, 1},
    {8, 512, 4, 512, 3, 1}, {8, 256, 4, 256, 1, 1},  {16, 3, 64, 32, 3, 1},
    {8, 64, 56, 64, 3, 1},
    // Strided 3x3 layers on large maps and few channels (downsampling
    // stages): without them the nearest strided point was the 7x7 stem.
    {8, 16, 64, 32, 3, 2},  {8, 64, 64, 128, 3, 2},  {8, 16, 32, 32, 3, 2},
    {8, 64, 32, 64, 3, 2},  {8, 32, 64, 32, 3, 1},
    // ImageNet-stage maps (56, 28, 14) at batch 16, plain and strided: with
    // the batch-8 grid alone every larger batch was an extrapolation.
    {16, 32, 56, 32, 3, 1}, {16, 64, 28, 64, 3, 1},  {16, 128, 14, 128, 3, 1},
    {16, 32, 56, 64, 3, 2}, {16, 64, 28, 128, 3, 2}, {16, 128, 14, 256, 3, 2},
    // The smallest dense 3x3s (a tiny CNN's stem, 37-110 kFLOP): below the
    // grid's least (1.2 MFLOP, 160 us in emulated bfloat16 here) a call
    // cost that one's, where a 3 -> 8 stem on 2 x 16 x 16 took 56-84 us.
    {2, 3, 16, 8, 3, 1},    {2, 8, 4, 8, 3, 1},
};

// (n, c, hw, oc, k, stride, groups): the small, pointwise, depthwise and
// grouped layers of mobile and ResNeXt-style networks. A depthwise 3x3 or a
// 1x1 layer on a small map runs at a fraction of a dense layer's rate (a
// 1x1 of 16 -> 32 channels on 8 x 16 x 16 took 94 us, 22 GFLOP/s, on a
// 2-vCPU VM), and squeeze-excite layers are 1x1 on a 1 x 1 map: with the
// dense grid alone MobileNet's convolutions were predicted at 0.3x.
const int64_t kMobileConvShapes[][7] = {
    {8, 32, 32, 32, 3, 1, 32},   {8, 32, 32, 32, 3, 2, 32},  {8, 128, 8, 128, 3, 1, 128},
    {8, 128, 8, 128, 3, 2, 128}, {32, 64, 16, 64, 3, 1, 64}, {8, 64, 16, 64, 5, 1, 64},
    {8, 16, 16, 32, 1, 1, 1},    {8, 64, 8, 64, 1, 1, 1},    {8, 128, 4, 256, 1, 1, 1},
    {32, 32, 32, 64, 1, 1, 1},   {8, 64, 1, 16, 1, 1, 1},    {8, 16, 1, 64, 1, 1, 1},
    {8, 16, 16, 16, 3, 1, 1},    {8, 128, 14, 128, 3, 1, 32}, {8, 64, 28, 64, 3, 1, 8},
    // Batch 2 on 2 x 2 to 8 x 8 maps: a call's fixed cost (a depthwise 3x3
    // takes 33 us whatever its size below that) is all there is.
    {2, 32, 8, 32, 3, 1, 32},    {2, 96, 2, 96, 3, 1, 96},   {2, 32, 8, 32, 1, 1, 1},
    {2, 96, 2, 96, 1, 1, 1},     {2, 3, 64, 32, 3, 2, 1},
    // The tail of an inverted-residual network (MobileNet-V2/V3, MNASNet,
    // EfficientNet) at small inputs: 1x1 expansions and projections of
    // hundreds of channels on 2 x 2 and 4 x 4 maps and squeeze-excite 1x1s
    // on 1 x 1 maps, whose weights outweigh their activations, and depthwise
    // 3x3 / 5x5 layers of 256-960 channels. Without them the nearest points
    // were 96-channel layers, and EfficientNet-B0's convolution backward at
    // 64 x 64 input was predicted at 0.68 of its hot-loop time.
    {2, 960, 2, 160, 1, 1, 1},   {2, 160, 2, 960, 1, 1, 1},  {2, 512, 4, 96, 1, 1, 1},
    {2, 96, 4, 512, 1, 1, 1},    {8, 960, 2, 160, 1, 1, 1},  {2, 256, 2, 1024, 1, 1, 1},
    {2, 960, 1, 40, 1, 1, 1},    {2, 40, 1, 960, 1, 1, 1},   {8, 512, 1, 32, 1, 1, 1},
    {2, 960, 2, 960, 5, 1, 960}, {2, 960, 2, 960, 3, 1, 960}, {2, 512, 4, 512, 5, 1, 512},
    {2, 256, 8, 256, 5, 1, 256}, {2, 128, 16, 128, 5, 2, 128}, {8, 512, 2, 512, 3, 1, 512},
    // ConvNeXt's depthwise 7x7 layers, stage by stage at a small input: a
    // window larger than the map takes oneDNN's slow paths (14x a
    // contiguous call's time when channels-last, at 2 x 2).
    {2, 96, 16, 96, 7, 1, 96},   {2, 384, 4, 384, 7, 1, 384}, {2, 768, 2, 768, 7, 1, 768},
    {8, 192, 8, 192, 7, 1, 192},
    // Grouped layers of several channels a group (ResNeXt, RegNet,
    // ShuffleNet-style grouped 1x1s): 4 and 16 channels a group in 2, 8
    // and 32 groups on 2 x 2 and 8 x 8 maps at batch 2, then strided, 1x1
    // and batch-8 ones. oneDNN runs them at neither a dense layer's rate
    // nor a depthwise one's (3x3s of 4-16 channels a group: 35-470 us
    // forward here, where the depthwise points' weight gradients ran 10-20x
    // their forward). With only the two above, ResNeXt-50's and RegNetX's
    // grouped 3x3s at a 32 x 32 input were predicted at 0.35-6.2x of their
    // replayed times (bfloat16 under autocast: 3x), their nearest points
    // depthwise or dense; a grouped layer's floor is its own path's
    // (convClass).
    {2, 8, 2, 8, 3, 1, 2},       {2, 8, 8, 8, 3, 1, 2},      {2, 32, 2, 32, 3, 1, 8},
    {2, 32, 8, 32, 3, 1, 8},     {2, 128, 2, 128, 3, 1, 32}, {2, 128, 8, 128, 3, 1, 32},
    {2, 32, 2, 32, 3, 1, 2},     {2, 32, 8, 32, 3, 1, 2},    {2, 128, 2, 128, 3, 1, 8},
    {2, 128, 8, 128, 3, 1, 8},   {2, 512, 2, 512, 3, 1, 32}, {2, 512, 8, 512, 3, 1, 32},
    {2, 256, 8, 256, 3, 2, 32},  {2, 64, 16, 64, 3, 2, 4},   {2, 64, 8, 64, 1, 1, 4},
    {8, 128, 8, 128, 3, 1, 8},
};

double convBackwardUs(const ConvPoint& c, const at::Tensor& x, const at::Tensor& w,
                      const at::Tensor& gy, bool input_half, const ProfileOptions& o) {
  const c10::OperatorHandle bwd =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution_backward", "");
  const std::vector<int64_t> st{c.stride, c.stride}, pad{c.kh / 2, c.kw / 2}, dil{1, 1};
  const std::vector<bool> mask{input_half, !input_half, !input_half};
  std::vector<c10::IValue> stack;
  return medianCallUs([&] {
    stack = {gy, x, w, c10::IValue(std::vector<int64_t>{c.oc}), st, pad, dil, c.transposed,
             std::vector<int64_t>{0, 0}, c.groups, mask};
    bwd.callBoxed(stack);
  }, o.quick, kLongCallUs,
     input_half ? "aten::convolution_backward:input" : "aten::convolution_backward:weight");
}

// `c` (transposed or not) on `input` by `w`: the forward, then each half of
// the backward with the gradient laid out as the forward's output is.
void timeConvPoint(const ConvPoint& c, const at::Tensor& input, const at::Tensor& w,
                   const ProfileOptions& o, double& fwd, double& bwd_input, double& bwd_weight) {
  const std::vector<int64_t> st{c.stride, c.stride}, pad{c.kh / 2, c.kw / 2}, dil{1, 1}, opad{0, 0};
  fwd = timeOp("aten::convolution", "", {input, w, c10::IValue(), st, pad, dil, c.transposed, opad, c.groups}, o);
  const at::Tensor gy =
      at::randn_like(at::convolution(input, w, {}, st, pad, dil, c.transposed, opad, c.groups));
  bwd_input = convBackwardUs(c, input, w, gy, true, o);
  bwd_weight = convBackwardUs(c, input, w, gy, false, o);
}

// Transposed convolutions {n, c, h, oc, k, stride, groups}, float32 and
// contiguous: decoders' stride-2 upsampling (4x4 as DCGAN's, 2x2 as a
// U-Net's) and a stride-1 3x3, over two decades of FLOPs.
const int64_t kConvTransposeShapes[][7] = {
    {8, 16, 8, 8, 4, 2, 1},   {8, 8, 16, 1, 4, 2, 1},  {8, 64, 16, 32, 4, 2, 1},
    {2, 32, 16, 32, 2, 2, 1}, {8, 128, 8, 64, 2, 2, 1}, {4, 32, 16, 16, 3, 1, 1},
};

// ImageNet-sized batches, only on a GPU (one call of the first takes a CPU
// core seconds): a GPU's rate keeps rising with the batch far beyond 16.
const int64_t kGpuConvShapes[][6] = {
    {128, 3, 224, 64, 7, 2},  {128, 64, 56, 64, 3, 1},   {128, 64, 56, 128, 3, 2},
    {128, 128, 28, 128, 3, 1}, {128, 128, 28, 256, 3, 2}, {128, 256, 14, 256, 3, 1},
    {128, 256, 14, 512, 3, 2}, {128, 512, 7, 512, 3, 1},  {128, 64, 56, 128, 1, 2},
    {64, 128, 28, 128, 3, 1},  {32, 64, 56, 64, 3, 1},    {32, 256, 14, 256, 3, 1},
};

// `first`: as measureGemmPass's.
void measureConvPass(const ProfileOptions& o, HwProfile& hw, const HwProfile* first) {
  std::vector<std::array<int64_t, 7>> shapes;
  for (const auto& s : kConvShapes) shapes.push_back({s[0], s[1], s[2], s[3], s[4], s[5], 1});
  for (const auto& s : kMobileConvShapes) shapes.push_back({s[0], s[1], s[2], s[3], s[4], s[5], s[6]});
  if (onGpu(o)) {
    for (const auto& s : kGpuConvShapes) shapes.push_back({s[0], s[1], s[2], s[3], s[4], s[5], 1});
  }
  // Each shape in float32, then again in each reduced-precision type the
  // device has a convolution kernel for (CPU libtorch 1.13 has none in
  // float16). A quick CPU profile times those contiguous only, and a full
  // one its emulated ones (emulatedLongCall): each layout adds as much
  // again, and autocast's float32 conversions of a channels-last network
  // are the rarer case.
  for (const auto& [dtype, type] : kTypes) {
    const at::Tensor probe = at::ones({1, 2, 4, 4}, tensorsOn(o).dtype(dtype));
    const at::Tensor probe_w = at::ones({2, 2, 3, 3}, tensorsOn(o).dtype(dtype));
    if (!kernelRuns([&] { at::convolution(probe, probe_w, {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1); })) {
      if (o.progress) o.progress(std::string("conv ") + type + ": no kernel on this device, not measured");
      continue;
    }
    const bool channels_last = !onGpu(o) && (dtype == at::kFloat || !o.quick);
    for (const auto& s : shapes) {
      ConvPoint c{s[0], s[1], s[2], s[2], s[3], s[4], s[4], s[5], s[6], 0, 0, 0};
      c.dtype = type;
      const at::Tensor x = at::randn({c.n, c.c, c.h, c.w}, tensorsOn(o)).to(dtype);
      const at::Tensor w = at::randn({c.oc, c.c / c.groups, c.kh, c.kw}, tensorsOn(o)).to(dtype);
      const auto same = [&](const ConvPoint& p) {
        return !p.transposed && p.n == c.n && p.c == c.c && p.h == c.h && p.oc == c.oc && p.kh == c.kh &&
               p.stride == c.stride && p.groups == c.groups;
      };
      const std::vector<int64_t> st{c.stride, c.stride}, pad{c.kh / 2, c.kw / 2};
      if (const ConvPoint* kept = emulatedBefore(first ? &first->conv : nullptr, hw.conv.size(), same,
                                                 &ConvPoint::fwd_us)) {
        hw.conv.push_back(*kept);
        continue;
      }
      const auto forward = [&] { at::convolution(x, w, {}, st, pad, {1, 1}, false, {0, 0}, c.groups); };
      const bool emulated =
          !first && emulatedLongCall(o, dtype, forward, float32TimeOf(hw.conv, same, &ConvPoint::fwd_us));
      if (emulated && o.quick) continue;
      timeConvPoint(c, x, w, o, c.fwd_us, c.bwd_input_us, c.bwd_weight_us);
      // The input channels-last, the weight as a module holds it: its output
      // and so the gradient arriving in the backward are then channels-last.
      if (channels_last && !emulated) {
        timeConvPoint(c, x.contiguous(at::MemoryFormat::ChannelsLast), w, o, c.fwd_cl_us, c.bwd_input_cl_us,
                      c.bwd_weight_cl_us);
      }
      hw.conv.push_back(c);
    }
  }
  if (!onGpu(o)) {
    for (const auto& s : kConvTransposeShapes) {
      ConvPoint c{s[0], s[1], s[2], s[2], s[3], s[4], s[4], s[5], s[6], 0, 0, 0};
      c.transposed = true;
      const at::Tensor x = at::randn({c.n, c.c, c.h, c.w}, tensorsOn(o));
      const at::Tensor w = at::randn({c.c, c.oc / c.groups, c.kh, c.kw}, tensorsOn(o));
      timeConvPoint(c, x, w, o, c.fwd_us, c.bwd_input_us, c.bwd_weight_us);
      hw.conv.push_back(c);
    }
  }
  if (o.progress) o.progress("conv: " + std::to_string(hw.conv.size()) + " shapes");
}

void measureGemm(const ProfileOptions& o, HwProfile& hw) { measureGemmPass(o, hw, nullptr); }
void measureConv(const ProfileOptions& o, HwProfile& hw) { measureConvPass(o, hw, nullptr); }

// Another pass over the GEMM, BMM and conv shapes (detail::keepFaster).
void measureComputeAgain(const ProfileOptions& o, HwProfile& hw) {
  ProfileOptions silent = o;
  silent.progress = nullptr;
  HwProfile again;
  measureGemmPass(silent, again, &hw);
  measureConvPass(silent, again, &hw);
  detail::keepFaster(hw, again);
  if (o.progress) o.progress("gemm, bmm, conv: measured again, the faster time kept");
}
}  // namespace

namespace detail {
double addRound(HwProfile& hw, const std::string& name, double value) {
  std::vector<double>& r = hw.rounds[name];
  r.push_back(value);
  // The middle value, or the mean of the middle two (two rounds so far).
  std::vector<double> s = r;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// The trivial calls, the replay step and the cold call after a stretch
// once more (CPU profiles): each figure the median of its rounds.
void measureCallCostsAgain(const ProfileOptions& o, HwProfile& hw) {
  measureTrivialCalls(o, hw);
  measureReplayStep(o, hw);
  measureColdAfter(o, hw);
}

void keepFaster(HwProfile& kept, const HwProfile& again) {
  auto faster = [](double& k, double now) { k = std::min(k, now); };
  for (size_t i = 0; i < kept.gemm.size() && i < again.gemm.size(); ++i) {
    faster(kept.gemm[i].us, again.gemm[i].us);
  }
  for (size_t i = 0; i < kept.gemm_nt.size() && i < again.gemm_nt.size(); ++i) {
    faster(kept.gemm_nt[i].us, again.gemm_nt[i].us);
  }
  for (size_t i = 0; i < kept.bmm.size() && i < again.bmm.size(); ++i) {
    faster(kept.bmm[i].us, again.bmm[i].us);
  }
  for (size_t i = 0; i < kept.conv.size() && i < again.conv.size(); ++i) {
    faster(kept.conv[i].fwd_us, again.conv[i].fwd_us);
    faster(kept.conv[i].bwd_input_us, again.conv[i].bwd_input_us);
    faster(kept.conv[i].bwd_weight_us, again.conv[i].bwd_weight_us);
    if (kept.conv[i].hasChannelsLast() && again.conv[i].hasChannelsLast()) {
      faster(kept.conv[i].fwd_cl_us, again.conv[i].fwd_cl_us);
      faster(kept.conv[i].bwd_input_cl_us, again.conv[i].bwd_input_cl_us);
      faster(kept.conv[i].bwd_weight_cl_us, again.conv[i].bwd_weight_cl_us);
    }
  }
}
}  // namespace detail

void timedSection(HwProfile& hw, const std::string& name, const std::function<void()>& part) {
  const double t0 = replay::nowUs();
  part();
  const double s = (replay::nowUs() - t0) / 1e6;
  auto& parts = hw.identity.sections_s;
  const auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == name; });
  if (it == parts.end()) {
    parts.emplace_back(name, s);
  } else {
    it->second += s;
  }
}

void measureCompute(const ProfileOptions& o, HwProfile& hw) {
  at::manual_seed(1234);
  resetStallTally();
  // Host measurements taken again where the machine slowed under them; the
  // retries at most 0.6 of the first tries' time with --quick (a quick
  // profile took 66-78 s here with 5-7% retried, 139 s with 11% and no
  // limit but the first tries' time), as long again in a full one.
  std::optional<SpeedGuardScope> guard;
  if (!onGpu(o)) {
    guard.emplace(o.quick ? 0.6 : 1.0);
    resetCallCold();  // a GPU's launches are probed apart (DeviceClockScope)
  }
  using Part = void (*)(const ProfileOptions&, HwProfile&);
  const auto run = [&](const char* name, Part part) { timedSection(hw, name, [&] { part(o, hw); }); };
  // On a GPU the replay step is host work (et_replay's own, around
  // asynchronous launches), timed on the host; every kernel after it is
  // timed on the device, its launch on the host beside it (launch_us).
  std::optional<DeviceClockScope> device_clock;
  if (onGpu(o)) {
    run("replay_step", detail::measureReplayStep);
    device_clock.emplace(o.device);
    run("dispatch", measureDispatch);
  } else {
    run("dispatch", measureDispatch);
    run("replay_step", detail::measureReplayStep);
    run("cold_after", detail::measureColdAfter);
    run("cold_kinds", detail::measureColdKinds);
  }
  run("gemm", measureGemm);
  run("conv", measureConv);
  if (!onGpu(o)) {
    run("call_costs_again", detail::measureCallCostsAgain);
    run("first_touch", detail::measureFirstTouch);
    run("release", detail::measureRelease);
    run("episode", detail::measureEpisode);
    run("retention", detail::measureRetention);
  }
  run("memory_bound", detail::measureMemoryBound);
  if (!onGpu(o)) run("first_touch", detail::measureFirstTouchAgain);
  run("pooling", detail::measurePooling);
  if (!onGpu(o)) run("batchnorm_planes", detail::measureBatchNormPlanes);
  if (!o.quick) run("gemm_conv_again", measureComputeAgain);
  run("embedding_bag", detail::measureEmbedding);
  run("foreach", detail::measureForeach);
  if (!o.quick) run("gemm_conv_again", measureComputeAgain);
  if (onGpu(o)) {
    hw.launch_us = launchHostUs();
    hw.launch_first_scale = std::clamp(launchFirstScale(), hw.launch_scale, 4.0);
    hw.sync_latency_us = syncLatencyUs();
    hw.synchronising_ops = synchronisingOps();
    hw.stall_share = 0;  // device time: the host's preemptions are not in it
    return;
  }
  run("memory_bound", detail::measureMemoryColdAgain);
  run("first_touch", detail::measureFirstTouchAgain);
  run("call_costs_again", detail::measureCallCostsAgain);
  hw.call_cold_us = callColdUs();
  hw.stall_share = std::min(stallShare(), 0.9);
  hw.stall_by_call.clear();
  for (const StallBin& b : stallShareByCall()) {
    hw.stall_by_call.push_back({b.up_to_us, std::min(b.share, 0.9)});
  }
  const SpeedGuardStats g = speedGuardStats();
  hw.speed_guard = {g.measurements, g.probe_us, g.retried_share, g.kept_disturbed_share,
                    std::max(g.slowdown, 1.0), g.retry_s, std::max(g.mean_slowdown, 1.0),
                    std::max(g.kept_slowdown, 1.0)};
  if (o.progress) {
    o.progress("speed: " + std::to_string(static_cast<int>(g.retried_share * 100 + 0.5)) +
               "% of the measurements taken again (the machine slowed under them; " +
               std::to_string(g.retry_s) + " s), slowdown " + std::to_string(g.slowdown) +
               " (median), " + std::to_string(g.mean_slowdown) + " (mean); the kept tries ran at " +
               std::to_string(g.kept_slowdown) + " (median), divided out of their samples");
  }
  // The share is the machine's state while profiling; a busy machine makes
  // every prediction slower by 1 / (1 - share), which is right only for
  // replays run in the same state.
  if (hw.stall_share > 0.2) {
    ETB_LOG(kWarn) << "the machine was busy while profiling: " << hw.stall_share * 100
                   << "% of the timed loops' time went beyond their median calls; predictions "
                   << "include it (profile again on a quiet machine to leave it out)";
  }
  if (o.progress) o.progress("stalls: " + std::to_string(hw.stall_share) + " of the timed loops' time");
}

}  // namespace etb::predict
