// SPDX-License-Identifier: MIT
//
// Loads one large PyTorch ET (or Chakra) file with readTrace and reports the
// throughput and the heap the loaded Trace keeps, from the allocator's own
// statistics (glibc mallinfo2: bytes in use after the load minus before),
// not from the Trace's estimate of itself. The process's peak RSS comes
// from outside (scripts/bench_load.sh runs this under /usr/bin/time -v).
//
//   etb_trace_load_bench --trace=big.json [benchmark flags]
//   ETB_BENCH_TRACE=big.json etb_trace_load_bench
//
// scripts/bench_load.sh builds the file and compares with Python's json.load.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>

#include "core/trace_io.h"

namespace {

// Heap bytes in use: small-block arenas plus mmapped large blocks.
double heapInUse() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd);
}

void loadTrace(benchmark::State& state, const std::string& path) {
  const double file_bytes = static_cast<double>(std::filesystem::file_size(path));
  double retained = 0;
  size_t nodes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const double before = heapInUse();
    state.ResumeTiming();
    etb::trace::Trace trace = etb::trace::readTrace(path);
    benchmark::DoNotOptimize(trace.nodes.data());
    // Freeing a multi-GB trace takes a while: keep it out of the load time
    // (json.load is timed the same way).
    state.PauseTiming();
    retained = heapInUse() - before;
    nodes = trace.nodes.size();
    { etb::trace::Trace done = std::move(trace); }
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * file_bytes));
  state.counters["file_MB"] = file_bytes / (1024.0 * 1024.0);
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["heap_MB"] = retained / (1024.0 * 1024.0);
  state.counters["heap_per_file_byte"] = retained / file_bytes;
}

// Takes --trace=PATH out of argv (Google Benchmark rejects unknown flags).
std::string takeTraceFlag(int* argc, char** argv) {
  std::string path;
  int out = 0;
  for (int i = 0; i < *argc; ++i) {
    if (std::strncmp(argv[i], "--trace=", 8) == 0) {
      path = argv[i] + 8;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  if (path.empty()) {
    const char* env = std::getenv("ETB_BENCH_TRACE");
    if (env != nullptr) path = env;
  }
  return path;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string path = takeTraceFlag(&argc, argv);
  if (path.empty() || !std::filesystem::is_regular_file(path)) {
    std::cerr << "etb_trace_load_bench: error: give a trace with --trace=PATH or "
                 "ETB_BENCH_TRACE (scripts/make_large_et.py builds one)\n";
    return 2;
  }
  benchmark::RegisterBenchmark("readTrace", loadTrace, path)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
