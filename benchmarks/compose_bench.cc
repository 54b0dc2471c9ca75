// SPDX-License-Identifier: MIT
//
// et_compose's editing passes on large traces built from real nodes: the
// transformer fleet sample's iteration repeated until the trace holds N
// nodes (100k, 1M, 4M). Timed per run: a selection plus a repeat, and a
// selection plus a dimension substitution (reading and writing files are
// the readers' and writers' benchmarks; the shape check is per distinct
// call and not part of this).
//
//   etb_compose_bench [--benchmark_filter=...]
//   /usr/bin/time -v etb_compose_bench --benchmark_filter=/1000000   (peak RSS)
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include "composer/scale.h"
#include "composer/selector.h"
#include "composer/splice.h"
#include "core/trace_io.h"

namespace {
using etb::trace::Trace;

// One synthetic trace at a time (4M nodes take GBs).
const Trace& synthetic(int64_t nodes) {
  static int64_t have = 0;
  static std::unique_ptr<Trace> trace;
  if (have == nodes) return *trace;
  trace.reset();
  const Trace base = etb::trace::readTrace(std::string(ETB_SOURCE_DIR) +
                                           "/fleet_samples/transformer/transformer.et.json.gz");
  const int copies = static_cast<int>((nodes + static_cast<int64_t>(base.nodes.size()) - 1) /
                                      static_cast<int64_t>(base.nodes.size()));
  trace = std::make_unique<Trace>(etb::compose::repeatTrace(base, copies));
  have = nodes;
  return *trace;
}

void report(benchmark::State& state, const Trace& in, size_t out_nodes) {
  state.counters["nodes"] = static_cast<double>(in.nodes.size());
  state.counters["out_nodes"] = static_cast<double>(out_nodes);
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(in.nodes.size()), benchmark::Counter::kIsIterationInvariantRate |
                                                benchmark::Counter::kInvert);
  state.counters["trace_MB"] = static_cast<double>(in.memoryBytes()) / (1024.0 * 1024.0);
}

// --select compute --repeat 2: every node copied once more.
void BM_SelectRepeat(benchmark::State& state) {
  const Trace& in = synthetic(state.range(0));
  const std::vector<etb::compose::Selector> sel{etb::compose::parseSelector("compute")};
  size_t out_nodes = 0;
  for (auto _ : state) {
    Trace out = etb::compose::repeatTrace(etb::compose::selectNodes(in, sel), 2);
    out_nodes = out.nodes.size();
    state.PauseTiming();  // freeing GBs is not composing
    { Trace gone = std::move(out); }
    state.ResumeTiming();
  }
  report(state, in, out_nodes);
}

// --select compute alone (the part both compositions share).
void BM_Select(benchmark::State& state) {
  const Trace& in = synthetic(state.range(0));
  const std::vector<etb::compose::Selector> sel{etb::compose::parseSelector("compute")};
  size_t out_nodes = 0;
  for (auto _ : state) {
    Trace out = etb::compose::selectNodes(in, sel);
    out_nodes = out.nodes.size();
    state.PauseTiming();
    { Trace gone = std::move(out); }
    state.ResumeTiming();
  }
  report(state, in, out_nodes);
}

// --select compute --scale-dim 256=512 (the transformer's d_model).
void BM_SelectScale(benchmark::State& state) {
  const Trace& in = synthetic(state.range(0));
  const std::vector<etb::compose::Selector> sel{etb::compose::parseSelector("compute")};
  size_t out_nodes = 0;
  for (auto _ : state) {
    Trace out = etb::compose::selectNodes(in, sel);
    etb::compose::scaleDimension(out, 256, 512);
    out_nodes = out.nodes.size();
    state.PauseTiming();
    { Trace gone = std::move(out); }
    state.ResumeTiming();
  }
  report(state, in, out_nodes);
}

// 4M nodes repeated twice hold about 10 GB at the peak: run it with
// --benchmark_filter=SelectRepeat/4000000 on a machine that has them.
BENCHMARK(BM_SelectRepeat)->Arg(100000)->Arg(1000000)->Arg(4000000)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
BENCHMARK(BM_Select)->Arg(100000)->Arg(1000000)->Arg(4000000)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
BENCHMARK(BM_SelectScale)->Arg(100000)->Arg(1000000)->Arg(4000000)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
}  // namespace

BENCHMARK_MAIN();
