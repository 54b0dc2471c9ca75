// SPDX-License-Identifier: MIT
// et_profile_hw: memory-bound curves, embedding lookups and _foreach_ loops.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/Version.h>

#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/base/log.h"
#include "predictor/hw_bench.h"
#include "predictor/timing.h"
#include "replayer/system_metrics.h"
#include "replayer/timer.h"
#include "replayer/zipf.h"

namespace etb::predict::detail {
namespace {

double timeOp(const char* name, const char* overload, const std::vector<c10::IValue>& args,
              const ProfileOptions& o) {
  return predict::timeOp(name, overload, args, o.quick);
}

// Indices for `count` lookups into `rows` rows: uniform, or Zipf with the
// hot rows spread over the table (as et_replay draws them).
at::Tensor indicesFor(int64_t rows, int64_t count, const std::string& dist, std::mt19937_64& rng,
                      const ProfileOptions& o) {
  if (dist == "uniform") return at::randint(0, rows, {count}, tensorsOn(o).dtype(at::kLong));
  const double alpha = std::stod(dist.substr(5));
  return at::tensor(replay::zipfSamples(rows, alpha, count, rng), at::kLong).to(o.device);
}

// Whether evictLines can empty a line from the caches on this CPU.
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
constexpr bool kEvictsLines = true;
#else
constexpr bool kEvictsLines = false;
#endif

// Evicts the lines of `bytes` at `p` from every level of the caches (x86
// clflush, AArch64 dc civac); nothing where kEvictsLines is false.
void evictLines(const char* p, size_t bytes) {
  constexpr size_t kLine = 64;  // the smallest line either architecture flushes by
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~(kLine - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
#if defined(__x86_64__) || defined(__i386__)
  for (uintptr_t a = first; a < end; a += kLine) _mm_clflush(reinterpret_cast<const void*>(a));
  _mm_mfence();
#elif defined(__aarch64__)
  for (uintptr_t a = first; a < end; a += kLine) asm volatile("dc civac, %0" ::"r"(a) : "memory");
  asm volatile("dsb ish" ::: "memory");
#else
  (void)first;
  (void)end;
#endif
}

// The rows of a CPU table that `idx` looks up, each once: what a lookup
// fetches from DRAM when the table is cold.
std::vector<int64_t> distinctRows(const at::Tensor& idx) {
  const at::Tensor rows = std::get<0>(at::_unique(idx.to(at::kCPU), /*sorted=*/false));
  const int64_t* r = rows.data_ptr<int64_t>();
  return {r, r + rows.numel()};
}
}  // namespace

// Empties the caches: streams a buffer twice the last-level cache through
// them (read and write), so the next kernel's inputs come from DRAM.
class CacheFlusher {
 public:
  explicit CacheFlusher(const MemoryFacts& memory)
      : buf_(at::zeros({static_cast<int64_t>(flushBytes(memory) / 4)})) {}
  void operator()() { buf_.add_(1.0); }

 private:
  at::Tensor buf_;
};

// A kernel class at one size, cache-warm (the loop re-reads its inputs)
// and cold (flushed before each call).
struct Kernel {
  const char* cls;
  const char* name;
  const char* overload;
  double bytes;
  std::vector<c10::IValue> args;
};

// `copies` sets of the kernel's arguments, its tensors cloned (a view's
// strides kept: clone preserves a dense layout).
std::vector<std::vector<c10::IValue>> argumentSets(const Kernel& k, int copies) {
  std::vector<std::vector<c10::IValue>> sets(static_cast<size_t>(copies));
  for (std::vector<c10::IValue>& set : sets) {
    for (const c10::IValue& a : k.args) set.push_back(a.isTensor() ? c10::IValue(a.toTensor().clone()) : a);
  }
  return sets;
}

// The kernel as a replay meets it between L2 and the LLC: `copies` sets of
// its arguments (tensors cloned) taken in turn, together more than L2 and at
// most half the LLC, and the outputs of the last `copies` calls kept alive so
// that the allocator hands out a block last written `copies` calls ago, not
// the one just freed. Each call alone is timed (freeing an old output is
// not the call's cost). -1 where one call's bytes leave no room to rotate.
// Calls that page-faulted are left out while at least three did not: these
// curves are the caches' cost, and whether glibc hands an output back from
// its heap or maps it afresh depends on what the profile freed before (a 2
// MiB point measured once at 925 us against 26 us, and predicted a relu 9x
// its time); first touches are charged apart (heap model, --faults).
double rotatingCallUs(const Kernel& k, const c10::OperatorHandle& op, const MemoryFacts& mem,
                      bool quick) {
  if (mem.l2_bytes <= 0 || mem.llc_bytes <= 0) return -1;
  const int copies = static_cast<int>(std::min(1024.0, std::ceil(3 * mem.l2_bytes / k.bytes)));
  if (copies < 2 || copies * k.bytes > mem.llc_bytes / 2) return -1;
  const std::vector<std::vector<c10::IValue>> sets = argumentSets(k, copies);
  std::vector<c10::IValue> kept(sets.size()), stack;
  // Through guardedSamples like medianCallUs's loops: measureKernel runs it
  // bare (UnguardedScope, timing.h), the LLC as other tenants share it.
  return medianOf(guardedSamples([&] {
    std::vector<double> samples, unfaulted;
    const double budget_us = quick ? 4e3 : 25e3, start = replay::nowUs();
    for (size_t i = 0; samples.size() < 5 || (replay::nowUs() - start < budget_us && samples.size() < 2000);
         ++i) {
      const size_t at = i % sets.size();
      stack = sets[at];
      const uint64_t faults = replay::processMinorFaults();
      const double t0 = replay::nowUs();
      op.callBoxed(stack);
      const double us = replay::nowUs() - t0;
      const bool faulted = replay::processMinorFaults() != faults;
      kept[at] = stack.empty() ? c10::IValue() : std::move(stack.front());
      if (i < sets.size()) continue;  // every set and output slot used once first
      samples.push_back(us);
      if (!faulted) unfaulted.push_back(us);
    }
    return unfaulted.size() >= 3 ? unfaulted : samples;
  }));
}

// The kernel cold: each call after a flush, on arguments of its own (clones
// taken in turn, up to kColdCopiesBytes of them). The flush streams twice the
// LLC through it, but an LLC that protects re-referenced lines (adaptive
// replacement) keeps part of a buffer used after every flush: on a 2-vCPU
// VM a 4 MiB zero_ took 300-410 us on the one buffer and 490 us on a fresh
// one each time, the rate a replay's gradient zeroing ran at (8 GB/s).
constexpr double kColdCopiesBytes = 256.0 * (1 << 20);

double coldRotatingCallUs(const Kernel& k, const c10::OperatorHandle& op, CacheFlusher& flush,
                          bool quick) {
  const int copies =
      std::clamp(static_cast<int>(kColdCopiesBytes / k.bytes), 1, coldCallSamples(quick));
  const std::vector<std::vector<c10::IValue>> sets = argumentSets(k, copies);
  size_t next = 0;
  std::vector<c10::IValue> stack;
  return coldCallUs([&] {
    stack = sets[next++ % sets.size()];
    op.callBoxed(stack);
  }, flush, quick);
}

// `cls` names the curves when the kernel's own name is not a fixed string.
void measureKernel(const Kernel& k, CacheFlusher& flush, const ProfileOptions& o, HwProfile& hw,
                   const std::string& cls = "") {
  const std::string c = cls.empty() ? std::string(k.cls) : cls;
  hw.bandwidth[c].push_back({k.bytes, timeOp(k.name, k.overload, k.args, o)});
  if (onGpu(o)) return;  // the host caches' curves
  const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow(k.name, k.overload);
  // From DRAM and the LLC, as the memory system runs (timing.h).
  const UnguardedScope bare;
  hw.bandwidth[c + "@cold"].push_back({k.bytes, coldRotatingCallUs(k, op, flush, o.quick)});
  const double l3 = rotatingCallUs(k, op, hw.memory, o.quick);
  if (l3 > 0) hw.bandwidth[c + "@l3"].push_back({k.bytes, l3});
}

// Special functions, each its own curve ("op:NAME"): their costs per
// element differ several-fold. Softmaxes run over rows of 256.
void measureSpecial(const at::Tensor& a, const at::Tensor& rows, double f, const ProfileOptions& o,
                    HwProfile& hw) {
  for (const char* op : {"exp", "sigmoid", "log", "erf", "silu"}) {
    hw.bandwidth[std::string("op:") + op].push_back(
        {2 * f, timeOp((std::string("aten::") + op).c_str(), "", {a}, o)});
  }
  hw.bandwidth["op:tanh"] = hw.bandwidth["transcendental"];
  hw.bandwidth["op:gelu"].push_back({2 * f, timeOp("aten::gelu", "", {a, std::string("none")}, o)});
  for (const char* op : {"_softmax", "_log_softmax"}) {
    hw.bandwidth[std::string("op:") + op].push_back(
        {2 * f, timeOp((std::string("aten::") + op).c_str(), "", {rows, int64_t{-1}, false}, o)});
  }
}

// Training-mode batch norm over NCHW activations, forward and backward:
// per-channel statistics over N x H x W take passes of their own that
// layer norm's rows (the "norm" curve) do not (conv_adamw's first batch
// norm replayed in 5.0 ms, 1.5 ms on the norm curve, without page faults).
// On a CPU 16 x 16 maps, up to 32 channels, the batch takes the rest.
// A GPU calls cuDNN's kernels where it has them (as batch_norm does in a
// replay) and spreads the statistics over channels and pieces of N x H x W;
// a network's largest batch norms are its stem's, few channels on large
// maps: 64 channels of maps up to 128 x 128. On an H200 the native kernels
// over 32 channels ran resnet18_big's at a quarter of its replayed rate,
// cuDNN over 128 channels of 32 x 32 maps at twice it (0.9 TB/s replayed
// on [128, 64, 112, 112], 1.7 on the curve).
void measureBatchNorm(const at::Tensor& a, double f, CacheFlusher& flush, const ProfileOptions& o,
                      HwProfile& hw) {
  const bool gpu = onGpu(o);
  const int64_t n = a.numel(), plane = std::min<int64_t>(n, gpu ? 16384 : 256);
  const int64_t c = std::min<int64_t>(n / plane, gpu ? 64 : 32), batch = n / plane / c;
  const at::Tensor x = a.view({batch, c, 16, plane / 16});
  const at::Tensor w = at::ones({c}, a.options()), b = at::zeros({c}, a.options());
  const at::Tensor mean = at::zeros({c}, a.options()), var = at::ones({c}, a.options());
  const std::vector<c10::IValue> forward{x, w, b, mean, var, true, 0.1, 1e-5};
  // cuDNN's forward once for what its backward takes: (output, save_mean,
  // save_var, reserve); nothing where the build has no cuDNN.
  std::vector<c10::IValue> saved;
  if (gpu) {
    if (const auto cudnn = c10::Dispatcher::singleton().findSchema({"aten::cudnn_batch_norm", ""})) {
      saved = forward;
      try {
        cudnn->callBoxed(saved);
      } catch (const std::exception&) {
        saved.clear();
      }
    }
  }
  if (saved.size() == 4) {
    measureKernel({"batchnorm", "aten::cudnn_batch_norm", "", 2 * f, forward}, flush, o, hw);
    measureKernel({"batchnorm_backward", "aten::cudnn_batch_norm_backward", "", 3 * f,
                   {x, x, w, mean, var, saved[1], saved[2], 1e-5, saved[3]}}, flush, o, hw);
    return;
  }
  const at::Tensor save_mean = at::zeros({c}, a.options()), save_invstd = at::ones({c}, a.options());
  measureKernel({"batchnorm", "aten::native_batch_norm", "", 2 * f, forward}, flush, o, hw);
  measureKernel({"batchnorm_backward", "aten::native_batch_norm_backward", "", 3 * f,
                 {x, x, w, mean, var, save_mean, save_invstd, true, 1e-5,
                  std::vector<bool>{true, true, true}}}, flush, o, hw);
}

// Reductions by shape: a sum over the leading dim of [n / W, W] (the bias
// gradients' sum over the batch: each output column gathers a strided
// column, "reduction:outer:W") and over the last dim of [n / R, R] (one
// short row per output, "reduction:rows:R"). Both run several times the
// rate of a full reduction's contiguous stream at some widths; the model
// interpolates in log width between these curves.
void measureReductions(const at::Tensor& a, double f, CacheFlusher& flush, const ProfileOptions& o,
                       HwProfile& hw) {
  const int64_t n = a.numel();
  for (const int64_t w : kOuterWidths) {
    if (2 * w > n) continue;
    measureKernel({nullptr, "aten::sum", "dim_IntList", f,
                   {a.view({n / w, w}), std::vector<int64_t>{0}, false, c10::IValue()}},
                  flush, o, hw, reductionCurve("outer", w));
  }
  for (const int64_t r : kReduceRowLengths) {
    if (2 * r > n) continue;
    measureKernel({nullptr, "aten::sum", "dim_IntList", f,
                   {a.view({n / r, r}), std::vector<int64_t>{1}, false, c10::IValue()}},
                  flush, o, hw, reductionCurve("rows", r));
  }
}

// Advanced indexing that picks elements, not rows: x[:, i, j] over the last
// dims (DLRM's pairwise-interaction gather of a [B, F, F] product, the
// lower triangle of 8 x 8 here) and its backward, the accumulating put.
// ATen's index kernel computes each element's offset from the index
// tensors (a copy streams); with the last dim indexed the offset changes
// from element to element. "op:index" is over twice the output's bytes,
// "op:index_put" over three times the values' (read, and the target read
// and written). Then the sums by index (below).
void measureIndexing(const at::Tensor& a, const ProfileOptions& o, HwProfile& hw) {
  const int64_t n = a.numel();
  if (n < 64) return;
  const at::Tensor x = a.narrow(0, 0, n / 64 * 64).view({n / 64, 8, 8});
  const at::Tensor tril = at::tril_indices(8, 8, 0, tensorsOn(o).dtype(at::kLong));
  c10::List<c10::optional<at::Tensor>> index;
  index.push_back(c10::nullopt);
  index.push_back(tril[0].contiguous());
  index.push_back(tril[1].contiguous());
  const double picked = 4.0 * static_cast<double>(n / 64 * tril.size(1));
  hw.bandwidth["op:index"].push_back({2 * picked, timeOp("aten::index", "Tensor", {x, index}, o)});
  const at::Tensor values = at::randn({n / 64, tril.size(1)}, tensorsOn(o));
  at::Tensor target = at::zeros_like(x);
  hw.bandwidth["op:index_put"].push_back(
      {3 * picked, timeOp("aten::_index_put_impl_", "", {target, index, values, true, true}, o)});
  // Sums by index (a GNN's messages into its nodes): index_add_ of rows of
  // R (hw_profile.h, kIndexAddRows) and scatter_add_ of rows of 16 along an
  // index expanded over the row (as torch_scatter-style code builds it),
  // into a table an eighth of the sources' rows.
  for (const int64_t r : kIndexAddRows) {
    const int64_t count = n / r;
    if (count < 8) continue;
    const at::Tensor source = r == 1 ? a : a.narrow(0, 0, count * r).view({count, r});
    at::Tensor table = r == 1 ? at::zeros({count / 8}, tensorsOn(o)) : at::zeros({count / 8, r}, tensorsOn(o));
    const at::Tensor idx = at::randint(0, count / 8, {count}, tensorsOn(o).dtype(at::kLong));
    hw.bandwidth[rowsCurve("op:index_add", r)].push_back(
        {4.0 * static_cast<double>(count * r),
         timeOp("aten::index_add_", "", {table, int64_t{0}, idx, source, c10::Scalar(1)}, o)});
  }
  const int64_t rows16 = n / 16;
  if (rows16 >= 8) {
    const at::Tensor source = a.narrow(0, 0, rows16 * 16).view({rows16, 16});
    at::Tensor table = at::zeros({rows16 / 8, 16}, tensorsOn(o));
    const at::Tensor idx =
        at::randint(0, rows16 / 8, {rows16, 1}, tensorsOn(o).dtype(at::kLong)).expand({rows16, 16});
    hw.bandwidth["op:scatter_add"].push_back(
        {3 * 4.0 * static_cast<double>(rows16 * 16),
         timeOp("aten::scatter_add_", "", {table, int64_t{0}, idx, source}, o)});
  }
}

// Element kernels that run a scalar loop or a longer formula than their
// class's curve: masked_fill with a mask broadcast over the rows (attention
// masks), where, gelu's and the softmaxes' backward (rows of 256).
void measureElementClasses(const at::Tensor& a, const at::Tensor& b, const at::Tensor& rows,
                           double f, const ProfileOptions& o, HwProfile& hw) {
  const int64_t n = a.numel();
  const at::Tensor mask = at::rand({64}, a.options()) > 0.5, cond = at::rand({n}, a.options()) > 0.5;
  hw.bandwidth["op:masked_fill"].push_back(
      {2 * f + 64, timeOp("aten::masked_fill", "Scalar", {a.view({n / 64, 64}), mask, c10::Scalar(-1.0)}, o)});
  hw.bandwidth["op:where"].push_back(
      {3 * f + static_cast<double>(n), timeOp("aten::where", "self", {cond, a, b}, o)});
  hw.bandwidth["op:gelu_backward"].push_back(
      {3 * f, timeOp("aten::gelu_backward", "", {b, a, std::string("none")}, o)});
  for (const char* op : {"_softmax_backward_data", "_log_softmax_backward_data"}) {
    hw.bandwidth[std::string("op:") + op].push_back(
        {3 * f, timeOp((std::string("aten::") + op).c_str(), "",
                       {rows, rows, int64_t{-1}, c10::ScalarType::Float}, o)});
  }
  measureIndexing(a, o, hw);
}


// The softmaxes over rows of each of kRowLengths and kTailRowLengths
// (hw_profile.h: rowsCurve), forward over input and output, backward over
// three tensors; the rows that fit in the tensor, whole.
void measureSoftmaxRows(const at::Tensor& a, const ProfileOptions& o, HwProfile& hw) {
  const int64_t n = a.numel();
  std::vector<int64_t> lengths(std::begin(kRowLengths), std::end(kRowLengths));
  lengths.insert(lengths.end(), std::begin(kTailRowLengths), std::end(kTailRowLengths));
  for (const int64_t r : lengths) {
    if (2 * r > n) continue;
    const at::Tensor rows = a.narrow(0, 0, n / r * r).view({n / r, r});
    const double bytes = 4.0 * static_cast<double>(n / r * r);
    for (const char* op : kRowsOps) {
      const bool backward = std::string(op).find("backward") != std::string::npos;
      const std::vector<c10::IValue> args =
          backward ? std::vector<c10::IValue>{rows, rows, int64_t{-1}, c10::ScalarType::Float}
                   : std::vector<c10::IValue>{rows, int64_t{-1}, false};
      hw.bandwidth[rowsCurve(std::string("op:") + op, r)].push_back(
          {(backward ? 3 : 2) * bytes, timeOp((std::string("aten::") + op).c_str(), "", args, o)});
    }
  }
}

// at::sort of int64 indices (the dense embedding_bag backward sorts its
// indices first): above a size the sort's temporaries change its rate
// several-fold, so it is a curve of its own over 8 bytes per index.
void measureSort(int64_t n, const ProfileOptions& o, HwProfile& hw) {
  if (n > (int64_t{1} << 18)) return;
  const at::Tensor idx = at::randint(0, 100000, {n}, tensorsOn(o).dtype(at::kLong));
  hw.bandwidth["op:sort_int64"].push_back(
      {8.0 * static_cast<double>(n), timeOp("aten::sort", "", {idx, int64_t{-1}, false}, o)});
}

void measurePooling(const ProfileOptions& o, HwProfile& hw) {
  // [N, 64, H, H] activations after a ReLU (max_pool2d's comparisons take
  // another time on NaN or on all-equal values: finite values, half zero,
  // as a network's replayed activations are).
  std::vector<std::pair<int64_t, int64_t>> sizes =
      o.quick ? std::vector<std::pair<int64_t, int64_t>>{{1, 16}, {1, 56}, {8, 56}}
              : std::vector<std::pair<int64_t, int64_t>>{{1, 8}, {1, 16}, {1, 32}, {2, 56}, {8, 56},
                                                         {8, 112}};
  if (onGpu(o)) sizes.insert(sizes.end(), {{32, 112}, {128, 112}});
  const auto ints = [](int64_t v) { return std::vector<int64_t>{v, v}; };
  for (const auto& [n, h] : sizes) {
    const at::Tensor x = at::relu(at::randn({n, 64, h, h}, tensorsOn(o)));
    double out_elems = 0;
    for (const int64_t k : kPoolWindows) {
      const int64_t pad = (k - 1) / 2;  // resnet's 3x3 pads 1, a 2x2 none
      const auto pooled = at::max_pool2d_with_indices(x, ints(k), ints(2), ints(pad));
      const at::Tensor& y = std::get<0>(pooled);
      const at::Tensor go = at::rand_like(y);
      out_elems = static_cast<double>(y.numel());
      hw.bandwidth[poolCurve("max_pool2d", k)].push_back(
          {4 * out_elems, timeOp("aten::max_pool2d", "", {x, ints(k), ints(2), ints(pad), ints(1), false}, o)});
      hw.bandwidth[poolCurve("avg_pool2d", k)].push_back(
          {4 * out_elems, timeOp("aten::avg_pool2d", "",
                                 {x, ints(k), ints(2), ints(pad), false, true, c10::IValue()}, o)});
      hw.bandwidth[poolCurve("avg_pool2d_backward", k)].push_back(
          {4 * out_elems, timeOp("aten::avg_pool2d_backward", "",
                                 {go, x, ints(k), ints(2), ints(pad), false, true, c10::IValue()}, o)});
      if (k != 3) continue;
      hw.bandwidth[poolCurve("max_pool2d_backward", 0)].push_back(
          {4 * (out_elems + static_cast<double>(x.numel())),
           timeOp("aten::max_pool2d_with_indices_backward", "",
                  {go, x, ints(k), ints(2), ints(pad), ints(1), false, std::get<1>(pooled)}, o)});
    }
  }
  if (o.progress) o.progress("pooling: " + std::to_string(sizes.size()) + " sizes");
}

// Batch norm's backward by plane size (HwProfile::batchnorm_backward_planes):
// 256 planes (4 samples x 64 channels) of every size up to 32 elements,
// then ladders the vector width divides and one element more, as [4, 64,
// plane] (the kernel sees N x C planes of H x W elements: a 1-D plane is
// the same loop).
void measureBatchNormPlanes(const ProfileOptions& o, HwProfile& hw) {
  constexpr int64_t kBatch = 4, kChannels = 64;
  auto& planes = hw.batchnorm_backward_planes;
  // The width of the kernels libtorch dispatches to, from its own report
  // ("CPU capability usage: AVX2"): 16 floats for AVX512, 8 otherwise (AVX2,
  // and the 256-bit default and VSX/ZVECTOR vectors).
  planes.vector_floats = at::show_config().find("CPU capability usage: AVX512") != std::string::npos ? 16 : 8;
  std::vector<int64_t> sizes;  // in increasing order, as the profile keeps them
  for (int64_t p = 1; p <= 33; ++p) sizes.push_back(p);
  for (const int64_t p : {64, 128, 256, 512}) sizes.insert(sizes.end(), {p, p + 1});
  const at::TensorOptions f = tensorsOn(o);
  const at::Tensor w = at::randn({kChannels}, f), mean = at::zeros({kChannels}, f),
                   var = at::ones({kChannels}, f);
  for (const int64_t p : sizes) {
    const at::Tensor x = at::randn({kBatch, kChannels, p}, f), gy = at::randn({kBatch, kChannels, p}, f);
    const auto saved = at::native_batch_norm(x, w, {}, mean.clone(), var.clone(), true, 0.1, 1e-5);
    const double us = timeOp("aten::native_batch_norm_backward", "",
                             {gy, x, w, mean, var, std::get<1>(saved), std::get<2>(saved), true, 1e-5,
                              std::vector<bool>{true, true, true}}, o);
    planes.per_plane.push_back({static_cast<double>(p), us / (kBatch * kChannels)});
  }
  if (o.progress) o.progress("batch norm backward: " + std::to_string(sizes.size()) + " plane sizes");
  // The forward (HwProfile::batchnorm_forward), training mode, over shapes
  // that set its four parts apart: few and many channels on planes of one
  // element (the loop over channels), many small planes at a few samples
  // and at many, and larger planes where the elements take over.
  const int64_t kForward[][3] = {{2, 16, 1},   {2, 512, 1},  {32, 512, 1}, {2, 16, 16},
                                 {2, 512, 4},  {16, 64, 4},  {2, 1024, 4}, {2, 64, 64},
                                 {2, 256, 16}, {8, 16, 256}, {4, 32, 1024}};
  hw.batchnorm_forward.clear();
  for (const auto& s : kForward) {
    const at::Tensor x = at::randn({s[0], s[1], s[2]}, f), ones = at::ones({s[1]}, f),
                     zeros = at::zeros({s[1]}, f);
    const double us = timeOp("aten::native_batch_norm", "",
                             {x, ones, zeros, zeros.clone(), ones.clone(), true, 0.1, 1e-5}, o);
    hw.batchnorm_forward.push_back({static_cast<double>(s[0]), static_cast<double>(s[1]),
                                    static_cast<double>(s[2]), us});
  }
  if (o.progress) o.progress("batch norm forward: " + std::to_string(hw.batchnorm_forward.size()) + " shapes");
}

namespace {
// The tensors of the memory-bound classes' kernels at one size (n floats).
struct ClassTensors {
  at::Tensor a, b, acc, rows, t;
  int64_t side = 0;
  double f = 0;  // bytes of one n-float tensor
};

ClassTensors classTensors(int64_t n, const ProfileOptions& o) {
  ClassTensors c;
  c.a = at::randn({n}, tensorsOn(o));
  c.b = at::randn({n}, tensorsOn(o));
  c.f = 4.0 * static_cast<double>(n);
  // In place: no output to allocate (large outputs cost page faults).
  c.acc = c.a.clone();
  c.rows = c.a.view({n / 256, 256});
  // A transposed (strided) 2-D copy: the layout changes of contiguous().
  c.side = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  c.t = at::randn({c.side, c.side}, tensorsOn(o)).t();
  return c;
}

// The classes' own kernels (one curve each, warm, cold and rotated).
std::vector<Kernel> classKernels(const ClassTensors& c) {
  const double f = c.f;
  return {
      {"elementwise", "aten::add", "Tensor", 3 * f, {c.a, c.b, c10::Scalar(1)}},
      {"unary", "aten::relu", "", 2 * f, {c.a}},
      {"inplace", "aten::add_", "Tensor", 3 * f, {c.acc, c.b, c10::Scalar(1)}},
      // Zero-filling in place: a write pass with nothing allocated (the
      // embedding backward's gradient table, zero_grad). Cold too: a
      // gradient is zeroed a whole iteration after it was last written,
      // and past the caches a write pass runs at a third of its hot rate
      // (8 GB/s against 26 on a 2-vCPU VM), which "unary" over twice the
      // bytes does not show.
      {"fill", "aten::zero_", "", f, {c.acc}},
      {"norm", "aten::native_layer_norm", "", 2 * f,
       {c.rows, std::vector<int64_t>{256}, c10::IValue(), c10::IValue(), 1e-5}},
      {"reduction", "aten::sum", "", f, {c.a, c10::IValue()}},
      {"copy", "aten::clone", "", 2 * 4.0 * c.side * c.side, {c.t, c10::IValue()}},
  };
}

// The long tail's own curves (longTailOps, "op:NAME") at n elements: each
// op on [n / 64, 64] (element ops and losses, their gradients of a mean's
// scalar) or [1, n / 256, 16, 16] (resampling to 32 x 32, padding by one),
// timed in an unnamed loop (no cold-call probe: those are the kernels' by
// name), over the bytes of its tensor arguments and its outputs. An op
// this libtorch lacks, or refuses at these arguments, is left out.
void measureLongTail(int64_t n, const ProfileOptions& o, HwProfile& hw) {
  const at::TensorOptions f = tensorsOn(o);
  const at::Tensor x = at::randn({n / 64, 64}, f), g = at::randn({n / 64, 64}, f);
  const at::Tensor p = at::rand({n / 64, 64}, f).clamp(0.01, 0.99), t = at::rand({n / 64, 64}, f);
  const at::Tensor g0 = at::ones({}, f);  // a mean's gradient
  const int64_t c = std::max<int64_t>(1, n / 256);
  const at::Tensor m = at::randn({1, c, 16, 16}, f), up = at::randn({1, c, 32, 32}, f),
                   padded = at::randn({1, c, 18, 18}, f);
  const std::vector<int64_t> out2{32, 32}, in4{1, c, 16, 16}, pad{1, 1, 1, 1};
  const c10::IValue none;
  const int64_t mean = 1;  // at::Reduction::Mean
  struct Call {
    const char* op;
    const char* overload;
    std::vector<c10::IValue> args;
  };
  const std::vector<Call> calls = {
      {"elu", "", {x, 1.0, 1, 1}},
      {"elu_backward", "", {g, 1.0, 1, 1, false, x}},
      {"leaky_relu", "", {x, 0.01}},
      {"leaky_relu_backward", "", {g, x, 0.01, false}},
      {"hardswish", "", {x}},
      {"hardswish_backward", "", {g, x}},
      {"hardsigmoid", "", {x}},
      {"hardsigmoid_backward", "", {g, x}},
      {"hardtanh", "", {x, -1.0, 1.0}},
      {"hardtanh_backward", "", {g, x, -1.0, 1.0}},
      {"softplus", "", {x, 1, 20}},
      {"softplus_backward", "", {g, x, 1, 20}},
      {"mish", "", {x}},
      {"mish_backward", "", {g, x}},
      {"binary_cross_entropy", "", {p, t, none, mean}},
      {"binary_cross_entropy_backward", "", {g0, p, t, none, mean}},
      {"mse_loss", "", {x, t, mean}},
      {"mse_loss_backward", "", {g0, x, t, mean}},
      {"smooth_l1_loss", "", {x, t, mean, 1.0}},
      {"smooth_l1_loss_backward", "", {g0, x, t, mean, 1.0}},
      {"huber_loss", "", {x, t, mean, 1.0}},
      {"huber_loss_backward", "", {g0, x, t, mean, 1.0}},
      {"upsample_bilinear2d", "", {m, out2, false, none, none}},
      {"upsample_bilinear2d_backward", "", {up, out2, in4, false, none, none}},
      {"upsample_nearest2d", "", {m, out2, none, none}},
      {"upsample_nearest2d_backward", "", {up, out2, in4, none, none}},
      {"reflection_pad2d", "", {m, pad}},
      {"reflection_pad2d_backward", "", {padded, m, pad}},
      {"cumsum", "", {x, int64_t{-1}, none}},
  };
  const auto tensorBytes = [](const c10::IValue& v) {
    return v.isTensor() ? static_cast<double>(v.toTensor().nbytes()) : 0.0;
  };
  for (const Call& call : calls) {
    if (!longTailOps().count(call.op)) {
      throw std::logic_error(std::string("et_profile_hw: ") + call.op + " is timed but not in longTailOps()");
    }
    const std::string name = std::string("aten::") + call.op;
    const auto schema = c10::Dispatcher::singleton().findSchema({name, call.overload});
    if (!schema) continue;
    std::vector<c10::IValue> stack = call.args;
    try {
      schema->callBoxed(stack);
    } catch (const std::exception& e) {
      ETB_LOG(kDebug) << name << " not timed at " << n << " elements: " << e.what();
      continue;
    }
    double bytes = 0;
    for (const c10::IValue& v : call.args) bytes += tensorBytes(v);
    for (const c10::IValue& v : stack) bytes += tensorBytes(v);
    const double us = medianCallUs([&] {
      stack = call.args;
      schema->callBoxed(stack);
    }, o.quick, kLongCallUs, "");
    hw.bandwidth[std::string("op:") + call.op].push_back({bytes, us});
  }
}

// The class sizes: 256 floats up, by `step`, to the largest.
std::vector<int64_t> classSizes(const ProfileOptions& o) {
  const int64_t step = o.quick ? 4 : 2;
  // A GPU's activations run to hundreds of MB (a 64 x 128 x 4096 float one
  // is 128 MiB) and its L2 holds tens of MB: larger sizes there.
  const int64_t largest = int64_t{1} << (onGpu(o) ? 26 : 24);
  std::vector<int64_t> sizes;
  for (int64_t n = 256; n <= largest; n *= step) sizes.push_back(n);
  return sizes;
}
}  // namespace

void measureMemoryBound(const ProfileOptions& o, HwProfile& hw) {
  CacheFlusher flush(hw.memory);
  const std::vector<int64_t> sizes = classSizes(o);
  // A quick CPU profile stops the curves of particular kernels (batch norm,
  // reductions by shape, element classes, special functions, dropout) at
  // 16 MiB, past what the caches keep, and the classes' own curves go on to
  // 64 MiB: beyond its last point a curve runs at that point's rate
  // (curveUs). On a VM with 11 us page faults the 64 MiB size took 82 s of
  // a 247 s quick profile, 58 of them these kernels' (each call maps its
  // output afresh).
  const int64_t derived_largest = o.quick && !onGpu(o) ? sizes.back() / 4 : sizes.back();
  for (const int64_t n : sizes) {
    const ClassTensors c = classTensors(n, o);
    const at::Tensor &a = c.a, &b = c.b, &rows = c.rows;
    at::Tensor acc = c.acc;
    const double f = c.f;
    for (const Kernel& k : classKernels(c)) measureKernel(k, flush, o, hw);
    if (n > derived_largest) continue;
    measureBatchNorm(a, f, flush, o, hw);
    measureReductions(a, f, flush, o, hw);
    measureElementClasses(a, b, rows, f, o, hw);
    measureSort(n, o, hw);
    hw.bandwidth["transcendental"].push_back({2 * f, timeOp("aten::tanh", "", {a}, o)});
    measureSpecial(a, rows, f, o, hw);
    measureSoftmaxRows(a, o, hw);
    // The long tail stops at 1 MiB a tensor in a quick profile (past L2),
    // 16 MiB in a full one (the resampling gradients' inputs are 4x that);
    // beyond its last point a curve keeps that point's rate.
    if (n <= std::min(derived_largest, o.quick ? int64_t{1} << 18 : int64_t{1} << 22)) {
      measureLongTail(n, o, hw);
    }
    // Dropout masks: self recorded as input and output, as a trace has it.
    // The sampler's cost depends on p (dropout 0.1 draws bernoulli_(0.9)).
    for (const double p : {0.1, 0.5, 0.9}) {
      hw.bandwidth[rngCurve(p)].push_back(
          {2 * f, timeOp("aten::bernoulli_", "float", {acc, p, c10::IValue()}, o)});
    }
  }
  if (o.progress) o.progress("memory-bound curves: " + std::to_string(hw.bandwidth["unary"].size()) + " sizes");
}

void measureMemoryColdAgain(const ProfileOptions& o, HwProfile& hw) {
  if (onGpu(o)) return;
  CacheFlusher flush(hw.memory);
  int points = 0;
  for (const int64_t n : classSizes(o)) {
    const ClassTensors c = classTensors(n, o);
    for (const Kernel& k : classKernels(c)) {
      const auto curve = hw.bandwidth.find(std::string(k.cls) + "@cold");
      if (curve == hw.bandwidth.end()) continue;
      const auto at = std::find_if(curve->second.begin(), curve->second.end(),
                                   [&](const SizePoint& p) { return p.bytes == k.bytes; });
      if (at == curve->second.end() || at->us <= 0) continue;
      const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(k.name, k.overload);
      const UnguardedScope bare;
      const double again = coldRotatingCallUs(k, op, flush, o.quick);
      if (again <= 0) continue;
      at->us = std::sqrt(at->us * again);
      ++points;
    }
  }
  if (o.progress) o.progress("memory-bound cold curves: " + std::to_string(points) + " points measured again");
}

// CPU 0's data or unified cache of `level` from sysfs (0: the highest
// level there is), bytes, or 0.
double sysfsCacheBytes(int want_level) {
  double best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_in(dir + "level"), size_in(dir + "size"), type_in(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(level_in >> level) || !(size_in >> size) || size.empty()) continue;
    if ((type_in >> type) && type == "Instruction") continue;
    double bytes = std::atof(size.c_str());
    if (size.back() == 'K') bytes *= 1024;
    if (size.back() == 'M') bytes *= 1024 * 1024;
    if (want_level > 0 ? level == want_level : level > best_level) {
      best_level = level;
      best = bytes;
    }
  }
  return best;
}

double sysconfBytes(int name) { return std::max(0.0, static_cast<double>(sysconf(name))); }

CacheSizes pickCacheSizes(const CacheSizes& sysfs, const CacheSizes& conf) {
  CacheSizes c = sysfs.llc > 0 ? sysfs : conf;
  c.source = c.llc > 0 ? (sysfs.llc > 0 ? "sysfs" : "sysconf") : "";
  if (c.llc <= 0) c.l2 = 0;
  // A machine whose last level is L2 has no level between it and DRAM.
  if (c.l2 >= c.llc) c.l2 = 0;
  return c;
}

// The first measured distance at which retention lost `share` of a buffer,
// or 0 where none did.
static double retentionDistance(const MemoryFacts& m, double share) {
  for (const SizePoint& r : m.retention) {
    if (r.us >= share) return r.bytes;
  }
  return 0;
}

double cacheKeepsBytes(const MemoryFacts& m) {
  const double lost = retentionDistance(m, 0.9);
  if (lost <= 0) return m.llc_bytes;
  return m.llc_bytes > 0 ? std::min(m.llc_bytes, lost) : lost;
}

double flushBytes(const MemoryFacts& m) { return std::max(2 * cacheKeepsBytes(m), 16.0 * (1 << 20)); }

namespace {
// The first-touch cost per page of a fresh 64 MiB mapping, at each time it
// was measured in this profile (measureFirstTouch, measureFirstTouchAgain).
std::vector<double>& firstTouchSamples() {
  static std::vector<double> s;
  return s;
}

double firstTouchUsPerPage(const ProfileOptions& o) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = size_t{64} << 20;
  const double us = medianCallUs([&] {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("et_profile_hw: mmap of 64 MiB failed");
    volatile char* c = static_cast<char*>(p);
    for (size_t i = 0; i < bytes; i += page) c[i] = 1;
    munmap(p, bytes);
  }, o.quick);
  return us / static_cast<double>(bytes / page);
}
}  // namespace

// One release of `pages` written pages: madvise(MADV_DONTNEED) of pages
// written just before (untimed), as glibc's trim and et_replay --heap match
// hand pages back. The kernel flushes each page's TLB entry apart up to its
// ceiling (tlb_single_page_flush_ceiling, 33) and the whole TLB beyond: on a
// 2-vCPU VM 5 us for one page, 101 for 33, 29 for 34, 205 for 1,024; on bare
// metal a fraction of a microsecond each. Every count to 64 is measured (the
// ceiling is a kernel setting), then a ladder to 4,096.
void measureRelease(const ProfileOptions& o, HwProfile& hw) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<size_t> counts;
  for (size_t n = 1; n <= 64; ++n) counts.push_back(n);
  for (size_t n : {96, 128, 192, 256, 512, 1024, 2048, 4096}) counts.push_back(n);
  const size_t bytes = counts.back() * page;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("et_profile_hw: mmap for the release curve failed");
  madvise(p, bytes, MADV_NOHUGEPAGE);  // 4 KiB pages, as a heap's
  char* c = static_cast<char*>(p);
  hw.memory.release.clear();
  const int tries = o.quick ? 9 : 25;
  for (size_t n : counts) {
    std::vector<double> us;
    for (int k = 0; k < tries; ++k) {
      for (size_t i = 0; i < n * page; i += page) c[i] = 1;
      const double t0 = replay::nowUs();
      madvise(p, n * page, MADV_DONTNEED);
      us.push_back(replay::nowUs() - t0);
    }
    hw.memory.release.push_back({static_cast<double>(n), medianOf(us)});
  }
  munmap(p, bytes);
  if (o.progress) {
    o.progress("release: " + std::to_string(releaseUs(hw.memory, 1)) + " us for a page, " +
               std::to_string(releaseUs(hw.memory, 256)) + " for 256");
  }
}

// A release and first touch in a stream of other work (MemoryFacts::
// episode): after `after_us` of small GEMMs and adds, pages of a resident
// block handed back and written by a kernel, then four short ops, against
// the same write and ops with the pages kept, paired rep by rep; the
// median of the differences. Et_replay --heap match hands an op's output
// pages back when it allocates them and the op faults them in; glibc's
// trims likewise come between kernels. The hot loops of measureRelease and
// firstTouchUsPerPage leave out what such an episode costs the kernel's
// fault path when its code and the page tables are out of the caches, and
// what the flushes cost the ops after it. Pages: one (a single flush),
// 32 (the per-page ceiling's side) and 256 (a whole-TLB flush).
void measureEpisode(const ProfileOptions& o, HwProfile& hw) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const std::vector<double> gaps = {0, 300, 3000, 10000};
  const std::vector<size_t> counts = {1, 32, 256};
  const size_t bytes = counts.back() * page;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("et_profile_hw: mmap for the fault episodes failed");
  madvise(p, bytes, MADV_NOHUGEPAGE);  // 4 KiB pages, as a heap's
  const at::Tensor block = at::from_blob(p, {static_cast<int64_t>(bytes / sizeof(float))},
                                         at::TensorOptions().dtype(at::kFloat));
  const at::Tensor a = at::rand({64, 64}), b = at::rand({64, 64});
  const at::Tensor x = at::rand({16384}), y = at::rand({16384});
  const auto work = [&](int calls) {
    for (int i = 0; i < calls; ++i) {
      at::mm(a, b);
      at::add(x, y);
    }
  };
  const auto workFor = [&](double us) {
    const double t0 = replay::nowUs();
    while (replay::nowUs() - t0 < us) work(1);
  };
  const int reps = o.quick ? 9 : 21;
  hw.memory.episode.clear();
  for (const double gap : gaps) {
    for (const size_t n : counts) {
      const at::Tensor pages = block.narrow(0, 0, static_cast<int64_t>(n * page / sizeof(float)));
      const auto once = [&](bool release) {
        block.fill_(1);
        workFor(gap);
        const double t0 = replay::nowUs();
        if (release) madvise(p, n * page, MADV_DONTNEED);
        pages.fill_(2);
        work(4);
        return replay::nowUs() - t0;
      };
      const std::vector<double> d = guardedSamples([&] {
        std::vector<double> out;
        for (int r = 0; r < reps; ++r) {
          const double kept = once(false);
          out.push_back(once(true) - kept);
        }
        return out;
      });
      hw.memory.episode.push_back({gap, static_cast<double>(n), std::max(0.0, medianOf(d))});
    }
  }
  munmap(p, bytes);
  if (o.progress) {
    const MemoryFacts::Episode& one = hw.memory.episode.front();
    o.progress("fault episode: " + std::to_string(one.us) + " us for a page in other work, " +
               std::to_string(hw.memory.episode[hw.memory.episode.size() - counts.size()].us) +
               " after " + std::to_string(gaps.back() / 1e3) + " ms of it");
  }
}

// Again later in the profile; the cost is the median of the times measured.
// On a VM the host's cost of handing the guest a page changes with its other
// guests: one 2-vCPU VM measured 1.56 us a page in one profile and 2.41 us
// in the next, minutes apart, while the replays between paid about 1.6.
void measureFirstTouchAgain(const ProfileOptions& o, HwProfile& hw) {
  std::vector<double>& s = firstTouchSamples();
  s.push_back(firstTouchUsPerPage(o));
  hw.memory.fault_us_per_page = medianOf(s);
}

void measureFirstTouch(const ProfileOptions& o, HwProfile& hw) {
  hw.memory.page_bytes = static_cast<double>(sysconf(_SC_PAGESIZE));
  firstTouchSamples().clear();
  measureFirstTouchAgain(o, hw);
  // The highest level sysfs lists may be L2 (then no L3 term), so L2 is
  // asked for by number and the largest level's size taken as the LLC.
  const CacheSizes c = pickCacheSizes({sysfsCacheBytes(2), sysfsCacheBytes(0), ""},
                                      {sysconfBytes(_SC_LEVEL2_CACHE_SIZE),
                                       std::max(sysconfBytes(_SC_LEVEL3_CACHE_SIZE),
                                                sysconfBytes(_SC_LEVEL2_CACHE_SIZE)), ""});
  hw.memory.llc_bytes = c.llc;
  hw.memory.l2_bytes = c.l2;
  hw.memory.cache_source = c.source;
  if (c.source.empty()) {
    ETB_LOG(kWarn) << "no cache sizes in sysfs or from CPUID (sysconf): every input is taken "
                   << "as cache-warm, and no retention or \"@l3\" curves are measured";
  }
  if (o.progress) o.progress("first touch: " + std::to_string(hw.memory.fault_us_per_page) + " us/page");
}

// The distance at which the measured share first reaches one half, MiB.
double retentionHalfMiB(const MemoryFacts& m) {
  const double half = retentionDistance(m, 0.5);
  if (half > 0) return half / (1 << 20);
  return m.retention.empty() ? 0 : m.retention.back().bytes / (1 << 20);
}

// How much of a buffer the caches keep after other traffic: an in-place
// add over `sets` buffers of 256 KiB taken in turn, so that each call finds
// its buffer after (sets - 1) x 256 KiB of the others. Its time rises from
// the rotation within four L2 sizes (the ground the "@l3" curves cover) to
// the largest rotation's, three LLCs (DRAM); the share of that rise at each
// distance is the share evicted, kept non-decreasing.
void measureRetention(const ProfileOptions& o, HwProfile& hw) {
  const double llc = hw.memory.llc_bytes;
  if (llc <= 0) return;
  constexpr int64_t kElems = 64 * 1024;
  const double buf = 4.0 * kElems;
  std::vector<double> distances = {std::max(4 * hw.memory.l2_bytes, 2 * buf)};
  const std::vector<double> of_llc = o.quick ? std::vector<double>{0.25, 0.5, 1, 2, 3}
                                             : std::vector<double>{0.125, 0.25, 0.375, 0.5, 0.75, 1, 1.5, 2, 3};
  if (hw.memory.cache_source == "sysconf") {
    // CPUID's L3 may be the package's, many times what one core keeps:
    // double from the ground up instead of fractions of it.
    while (2 * distances.back() < 3 * llc) distances.push_back(2 * distances.back());
    distances.push_back(3 * llc);
  } else {
    for (const double f : of_llc) {
      if (f * llc > distances.back()) distances.push_back(f * llc);
    }
  }
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::add_", "Scalar");
  std::vector<at::Tensor> bufs;
  std::vector<c10::IValue> stack;
  std::vector<double> us;
  for (const double d : distances) {
    const size_t sets = static_cast<size_t>(d / buf) + 1;
    while (bufs.size() < sets) bufs.push_back(at::rand({kElems}));
    size_t i = 0;
    const auto call = [&] {
      stack = {bufs[i++ % sets], c10::Scalar(1.0), c10::Scalar(1)};
      op.callBoxed(stack);
    };
    for (size_t k = 0; k < sets; ++k) call();  // every buffer at its distance once
    us.push_back(medianCallUs(call, o.quick));
  }
  const double ground = us.front(), top = us.back();
  if (top <= ground) return;  // no cache effect measurable: keep the step
  double share = 0;
  for (size_t k = 0; k < distances.size(); ++k) {
    share = std::max(share, std::clamp((us[k] - ground) / (top - ground), 0.0, 1.0));
    hw.memory.retention.push_back({distances[k], share});
  }
  if (o.progress && !onGpu(o)) {
    o.progress("cache retention: half evicted by " + std::to_string(retentionHalfMiB(hw.memory)) + " MiB");
  }
}

void measureEmbedding(const ProfileOptions& o, HwProfile& hw) {
  std::mt19937_64 rng(1234);
  const c10::OperatorHandle fwd =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_embedding_bag", "");
  const c10::OperatorHandle bwd =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_embedding_bag_backward", "");
  const int64_t batch = 256;
  CacheFlusher flush(hw.memory);
  for (int64_t rows : sizesOf(o, {1000, 100000, 1000000}, {1000, 30000, 100000, 1000000, 4000000})) {
    for (int64_t dim : sizesOf(o, {16, 64}, {16, 64, 128})) {
      // One table for its six points: filling the 4M x 128 one (2 GB) took
      // seconds each time.
      const at::Tensor w = at::randn({rows, dim}, tensorsOn(o));
      // The backward's zero-filled gradient alone, as this section meets it:
      // a million-row table's is mapped afresh per call, and its faults cost
      // what they cost now, not the profile's median (a slow spell measured
      // every backward here 1.3x and was read as the backward's own cost).
      double fill_us = 0;
      if (!onGpu(o)) {
        fill_us = medianCallUs([&] { at::zeros({rows, dim}, tensorsOn(o)); }, o.quick, kLongCallUs, "aten::zeros");
      }
      for (int64_t pooling : sizesOf(o, {1, 20}, {1, 8, 32})) {
        for (const char* dist : {"uniform", "zipf:1.1"}) {
          const at::Tensor idx = indicesFor(rows, batch * pooling, dist, rng, o);
          const at::Tensor off = at::arange(0, batch * pooling, pooling, tensorsOn(o).dtype(at::kLong));
          EmbeddingPoint e{rows, dim, batch, pooling, dist, 0, 0};
          e.fill_us = fill_us;
          std::vector<c10::IValue> stack;
          const auto lookup = [&] {
            stack = {w, idx, off, false, int64_t{0}, false, c10::IValue(), false, int64_t{-1}};
            fwd.callBoxed(stack);
          };
          e.fwd_us = medianCallUs(lookup, o.quick, kLongCallUs, "aten::_embedding_bag");
          if (!onGpu(o)) {
            const UnguardedScope bare;  // from DRAM, as the memory system runs (timing.h)
            e.fwd_cold_us = coldCallUs(lookup, flush, o.quick);
            // The looked-up rows alone evicted: the code, the indices and
            // the allocator stay warm, as in a replay whose tables were
            // last touched an iteration ago. Evicting 5,120 rows costs
            // microseconds, so the full count of samples.
            if (kEvictsLines) {
              const std::vector<int64_t> touched = distinctRows(idx);
              const size_t row_bytes = static_cast<size_t>(dim) * w.element_size();
              const char* base = static_cast<const char*>(w.data_ptr());
              const auto evict = [&] {
                for (const int64_t r : touched) evictLines(base + static_cast<size_t>(r) * row_bytes, row_bytes);
              };
              e.fwd_rows_cold_us = coldCallUs(lookup, evict, /*quick=*/false);
            }
          }
          // As autograd calls it (and traces record it): offset2bag empty,
          // rebuilt from the offsets inside.
          const auto out = at::_embedding_bag(w, idx, off, false, 0);
          const at::Tensor g = at::randn({batch, dim}, tensorsOn(o));
          const auto backward = [&] {
            stack = {g, idx, off, at::empty({0}, tensorsOn(o).dtype(at::kLong)), std::get<2>(out), std::get<3>(out),
                     rows, false, int64_t{0}, false, c10::IValue(), int64_t{-1}};
            bwd.callBoxed(stack);
          };
          e.bwd_us = medianCallUs(backward, o.quick, kLongCallUs, "aten::_embedding_bag_backward");
          // In a training step the gradient, indices and sort buffers come
          // from DRAM; the hot loop keeps a gradient that fits the LLC there.
          // Beyond what the caches keep the hot loop is as cold, and each
          // call zero-fills and faults in the whole gradient (with a
          // package-wide 508 MiB L3 and 12 us faults, the cold calls of the
          // tables up to 2 GB took most of a 40-minute profile).
          if (!onGpu(o) && static_cast<double>(rows * dim) * 4 <= 4 * cacheKeepsBytes(hw.memory)) {
            const UnguardedScope bare;
            e.bwd_cold_us = coldCallUs(backward, flush, o.quick);
          }
          hw.embedding.push_back(e);
        }
      }
    }
  }
  if (o.progress) o.progress("embedding_bag: " + std::to_string(hw.embedding.size()) + " tables");
}

// Each _foreach_ overload libtorch's foreach optimizers (SGD, Adam, AdamW)
// call, timed apart: per tensor they differ several times over (on 1.13's
// CPU kernels a list times a number costs 1.5-1.8 us a tensor, a list plus
// a list 0.3-0.7, zeroing 0.1-0.3). Values that stay finite and normal
// over many calls: factors of one, positive divisors.
void measureForeach(const ProfileOptions& o, HwProfile& hw) {
  struct Overload {
    const char* name;
    const char* overload;
    int lists;       // tensor lists it reads (in place: the first one also written)
    int out_lists;   // lists it returns
    enum { kNone, kAlpha, kScalar, kScalars } extra;
  };
  const std::vector<Overload> overloads = {
      {"aten::_foreach_add_", "List", 2, 0, Overload::kAlpha},
      {"aten::_foreach_mul_", "Scalar", 1, 0, Overload::kScalar},
      {"aten::_foreach_add_", "Scalar", 1, 0, Overload::kScalar},
      {"aten::_foreach_div_", "ScalarList", 1, 0, Overload::kScalars},
      {"aten::_foreach_addcmul_", "Scalar", 3, 0, Overload::kScalar},
      {"aten::_foreach_addcdiv_", "ScalarList", 3, 0, Overload::kScalars},
      {"aten::_foreach_zero_", "", 1, 0, Overload::kNone},
      {"aten::_foreach_sqrt", "", 1, 1, Overload::kNone},
      {"aten::_foreach_add", "Scalar", 1, 1, Overload::kScalar},
  };
  for (const Overload& op : overloads) {
    const std::string key = std::string(op.name) + (*op.overload ? "." : "") + op.overload;
    for (int64_t tensors : {4, 32, 128}) {
      for (int64_t each : sizesOf(o, {256, 65536}, {64, 1024, 16384, 262144})) {
        std::vector<c10::IValue> args;
        for (int l = 0; l < op.lists; ++l) {
          std::vector<at::Tensor> xs;
          for (int64_t i = 0; i < tensors; ++i) xs.push_back(at::rand({each}, tensorsOn(o)) + 1);
          args.emplace_back(xs);
        }
        if (op.extra == Overload::kAlpha || op.extra == Overload::kScalar) {
          args.emplace_back(c10::Scalar(1.0));
        } else if (op.extra == Overload::kScalars) {
          c10::impl::GenericList ones(c10::NumberType::get());
          for (int64_t i = 0; i < tensors; ++i) ones.push_back(c10::IValue(c10::Scalar(1.0)));
          args.emplace_back(std::move(ones));
        }
        // Launch costs by list length (a GPU profile's launch_us, which
        // et_predict reads for every _foreach_ op as "aten::_foreach_add_:T"):
        // the kernels a _foreach_ op launches grow with its tensors.
        const std::string launch = key == kForeachList ? std::string(op.name) : key;
        const double us = predict::timeOp(op.name, op.overload, args, o.quick,
                                          launch + ":" + std::to_string(tensors));
        const double bytes = 4.0 * static_cast<double>(tensors * each * (op.lists + op.out_lists));
        hw.foreach_ops.push_back({tensors, tensors * each, us, key, bytes});
      }
    }
  }
  if (o.progress) {
    o.progress("_foreach_: " + std::to_string(hw.foreach_ops.size()) + " lists over " +
               std::to_string(overloads.size()) + " overloads");
  }
}

}  // namespace etb::predict::detail
