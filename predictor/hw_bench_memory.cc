// SPDX-License-Identifier: MIT
// et_profile_hw: memory-bound curves, embedding lookups and _foreach_ loops.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "predictor/hw_bench.h"
#include "predictor/timing.h"
#include "replayer/zipf.h"

namespace etb::predict::detail {
namespace {

double timeOp(const char* name, const char* overload, const std::vector<c10::IValue>& args,
              const ProfileOptions& o) {
  return predict::timeOp(name, overload, args, o.quick);
}

// Indices for `count` lookups into `rows` rows: uniform, or Zipf with the
// hot rows spread over the table (as et_replay draws them).
at::Tensor indicesFor(int64_t rows, int64_t count, const std::string& dist, std::mt19937_64& rng) {
  if (dist == "uniform") return at::randint(0, rows, {count}, at::TensorOptions().dtype(at::kLong));
  const double alpha = std::stod(dist.substr(5));
  return at::tensor(replay::zipfSamples(rows, alpha, count, rng), at::kLong);
}
}  // namespace

void measureMemoryBound(const ProfileOptions& o, HwProfile& hw) {
  const int64_t step = o.quick ? 4 : 2;
  for (int64_t n = 256; n <= (int64_t{1} << 24); n *= step) {
    const at::Tensor a = at::randn({n}), b = at::randn({n});
    const double f = 4.0 * static_cast<double>(n);
    hw.bandwidth["elementwise"].push_back(
        {3 * f, timeOp("aten::add", "Tensor", {a, b, c10::Scalar(1)}, o)});
    hw.bandwidth["unary"].push_back({2 * f, timeOp("aten::relu", "", {a}, o)});
    // In place: no output to allocate (large outputs cost page faults).
    at::Tensor acc = a.clone();
    hw.bandwidth["inplace"].push_back(
        {3 * f, timeOp("aten::add_", "Tensor", {acc, b, c10::Scalar(1)}, o)});
    hw.bandwidth["transcendental"].push_back({2 * f, timeOp("aten::tanh", "", {a}, o)});
    // Dropout masks: self recorded as input and output, as a trace has it.
    // The sampler's cost depends on p (dropout 0.1 draws bernoulli_(0.9)).
    for (const double p : {0.1, 0.5, 0.9}) {
      hw.bandwidth[rngCurve(p)].push_back(
          {2 * f, timeOp("aten::bernoulli_", "float", {acc, p, c10::IValue()}, o)});
    }
    const at::Tensor rows = a.view({n / 256, 256});
    hw.bandwidth["norm"].push_back(
        {2 * f, timeOp("aten::native_layer_norm", "",
                       {rows, std::vector<int64_t>{256}, c10::IValue(), c10::IValue(), 1e-5}, o)});
    hw.bandwidth["reduction"].push_back({f, timeOp("aten::sum", "", {a, c10::IValue()}, o)});
    // A transposed (strided) 2-D copy: the layout changes of contiguous().
    const int64_t side = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
    const at::Tensor t = at::randn({side, side}).t();
    hw.bandwidth["copy"].push_back(
        {2 * 4.0 * side * side, timeOp("aten::clone", "", {t, c10::IValue()}, o)});
  }
  if (o.progress) o.progress("memory-bound curves: " + std::to_string(hw.bandwidth["unary"].size()) + " sizes");
}

void measureFirstTouch(const ProfileOptions& o, HwProfile& hw) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = size_t{64} << 20;
  hw.memory.page_bytes = static_cast<double>(page);
  const double us = medianCallUs([&] {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("et_profile_hw: mmap of 64 MiB failed");
    volatile char* c = static_cast<char*>(p);
    for (size_t i = 0; i < bytes; i += page) c[i] = 1;
    munmap(p, bytes);
  }, o.quick);
  hw.memory.fault_us_per_page = us / static_cast<double>(bytes / page);
  if (o.progress) o.progress("first touch: " + std::to_string(hw.memory.fault_us_per_page) + " us/page");
}

void measureEmbedding(const ProfileOptions& o, HwProfile& hw) {
  std::mt19937_64 rng(1234);
  const c10::OperatorHandle fwd =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_embedding_bag", "");
  const c10::OperatorHandle bwd =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_embedding_bag_backward", "");
  const int64_t batch = 256;
  for (int64_t rows : sizesOf(o, {1000, 100000, 1000000}, {1000, 30000, 100000, 1000000, 4000000})) {
    for (int64_t dim : sizesOf(o, {16, 64}, {16, 64, 128})) {
      for (int64_t pooling : sizesOf(o, {1, 20}, {1, 8, 32})) {
        for (const char* dist : {"uniform", "zipf:1.1"}) {
          const at::Tensor w = at::randn({rows, dim});
          const at::Tensor idx = indicesFor(rows, batch * pooling, dist, rng);
          const at::Tensor off = at::arange(0, batch * pooling, pooling, at::kLong);
          EmbeddingPoint e{rows, dim, batch, pooling, dist, 0, 0};
          std::vector<c10::IValue> stack;
          e.fwd_us = medianCallUs([&] {
            stack = {w, idx, off, false, int64_t{0}, false, c10::IValue(), false, int64_t{-1}};
            fwd.callBoxed(stack);
          }, o.quick);
          // As autograd calls it (and traces record it): offset2bag empty,
          // rebuilt from the offsets inside.
          const auto out = at::_embedding_bag(w, idx, off, false, 0);
          const at::Tensor g = at::randn({batch, dim});
          e.bwd_us = medianCallUs([&] {
            stack = {g, idx, off, at::empty({0}, at::kLong), std::get<2>(out), std::get<3>(out),
                     rows, false, int64_t{0}, false, c10::IValue(), int64_t{-1}};
            bwd.callBoxed(stack);
          }, o.quick);
          hw.embedding.push_back(e);
        }
      }
    }
  }
  if (o.progress) o.progress("embedding_bag: " + std::to_string(hw.embedding.size()) + " tables");
}

void measureForeach(const ProfileOptions& o, HwProfile& hw) {
  for (int64_t tensors : {4, 32, 128}) {
    for (int64_t each : sizesOf(o, {256, 65536}, {64, 1024, 16384, 262144})) {
      std::vector<at::Tensor> xs, ys;
      for (int64_t i = 0; i < tensors; ++i) {
        xs.push_back(at::randn({each}));
        ys.push_back(at::randn({each}));
      }
      hw.foreach_ops.push_back(
          {tensors, tensors * each,
           timeOp("aten::_foreach_add_", "List", {xs, ys, c10::Scalar(1)}, o)});
    }
  }
  if (o.progress) o.progress("_foreach_: " + std::to_string(hw.foreach_ops.size()) + " lists");
}

}  // namespace etb::predict::detail
