// SPDX-License-Identifier: MIT
//
// Loads one large PyTorch ET (or Chakra) file with readTrace and reports the
// throughput and the loaded Trace's size relative to the file.
//
//   etb_trace_load_bench --trace=big.json [benchmark flags]
//   ETB_BENCH_TRACE=big.json etb_trace_load_bench
//
// scripts/bench_load.sh builds the file and compares with Python's json.load.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>

#include "core/trace_io.h"

namespace {

void loadTrace(benchmark::State& state, const std::string& path) {
  const double file_bytes = static_cast<double>(std::filesystem::file_size(path));
  size_t memory = 0;
  size_t nodes = 0;
  for (auto _ : state) {
    etb::trace::Trace trace = etb::trace::readTrace(path);
    benchmark::DoNotOptimize(trace.nodes.data());
    // memoryBytes() walks every node and freeing a multi-GB trace takes a
    // while: keep both out of the load time (json.load is timed the same way).
    state.PauseTiming();
    memory = trace.memoryBytes();
    nodes = trace.nodes.size();
    { etb::trace::Trace done = std::move(trace); }
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * file_bytes));
  state.counters["file_MB"] = file_bytes / (1024.0 * 1024.0);
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["trace_MB"] = static_cast<double>(memory) / (1024.0 * 1024.0);
  state.counters["mem_per_file_byte"] = static_cast<double>(memory) / file_bytes;
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
