// SPDX-License-Identifier: MIT
//
// Replay overhead: a trace of 10,000 tiny ops (add/mul on 4-element
// tensors) replayed by the engine, against the same ATen calls made
// directly from a C++ loop. Per-op time = 1 / items_per_second.
// scripts/bench_overhead.py times Python eager PyTorch on the same chain.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include "core/model/tiny_op_chain.h"
#include "replayer/comm/communicator.h"
#include "replayer/executor.h"
#include "replayer/op_selection.h"
#include "replayer/timer.h"

namespace {
using namespace etb;
constexpr int kOps = 10000;
constexpr int64_t kElems = 4;

// x_{i+1} = x_i + w  (even i) or x_i * w (odd i); w and x_0 are leaves.
trace::Trace chainTrace() {
  return trace::tinyOpChain(
      {{"aten::add", "Tensor", "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", true},
       {"aten::mul", "Tensor", "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", true}},
      kOps, kElems);
}

void BM_ReplayTinyOps(benchmark::State& state) {
  at::set_num_threads(1);
  const trace::Trace t = chainTrace();
  const auto selected = replay::selectNodes(t, replay::chooseIteration(t, 0));
  replay::detail::Plan plan = replay::detail::buildPlan(t, selected, {});
  auto comm = replay::makeLocalCommunicator();
  replay::DeviceSync sync;
  replay::detail::Executor exec(t, plan, *comm, sync);
  exec.runIteration(false, nullptr);  // warm-up
  if (plan.coverage.replayed != kOps) state.SkipWithError("not every op was replayed");
  for (auto _ : state) exec.runIteration(false, nullptr);
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(BM_ReplayTinyOps)->Unit(benchmark::kMillisecond);

void BM_DirectAtenTinyOps(benchmark::State& state) {
  at::set_num_threads(1);
  const at::Tensor w = at::rand({kElems});
  const at::Tensor x0 = at::rand({kElems});
  for (auto _ : state) {
    at::Tensor x = x0;
    for (int i = 0; i < kOps; ++i) x = i % 2 ? at::mul(x, w) : at::add(x, w);
    benchmark::DoNotOptimize(x);
  }
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(BM_DirectAtenTinyOps)->Unit(benchmark::kMillisecond);
}  // namespace

BENCHMARK_MAIN();
