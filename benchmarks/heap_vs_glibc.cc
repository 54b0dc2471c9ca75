// SPDX-License-Identifier: MIT
// etb_heap_vs_glibc [--start BYTES] [--passes N] [--keep DIR] [SAMPLE...]
// The heap model against glibc itself. For each fleet sample, the heap
// script et_predict builds (predictor/heap_model.h: the calls et_replay's
// tensors make) is played through this machine's malloc in a new process
// (etb_heap_play) and through HeapModel; one line per sample gives the fresh
// pages of each iteration, model / glibc. Iterations from the third on are
// what et_predict charges (et_replay's two warm-ups come first). The
// glibc side is counted by the kernel, so it is the reference the model is
// measured against; what it leaves out is the real replay's own small
// objects (benchmarks/RESULTS.md, 2026-11-26). --keep DIR leaves each
// sample's script there (DIR/SAMPLE.heap.txt) for etb_heap_play.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/trace_io.h"
#include "predictor/heap_model.h"
#include "replayer/op_selection.h"

namespace {
using etb::predict::HeapCall;
using etb::predict::HeapScript;

std::string scriptText(const HeapScript& s, int passes) {
  std::ostringstream out;
  out.precision(17);
  for (const HeapCall& c : s.leaves) out << "L " << c.key << " " << c.bytes << "\n";
  for (int pass = 0; pass < passes; ++pass) {
    for (const std::vector<HeapCall>& step : s.steps) {
      for (const HeapCall& c : step) {
        if (c.first_pass_only && pass > 0) continue;
        if (c.alloc) out << "A " << c.key << " " << c.bytes << "\n";
        else out << "F " << c.key << "\n";
      }
    }
    out << "P\n";
  }
  return out.str();
}

std::vector<long> glibcFaults(const std::string& script, const std::string& name, double start,
                              const std::string& keep) {
  const std::filesystem::path path =
      keep.empty() ? std::filesystem::temp_directory_path() / ("etb_heap_" + name + ".txt")
                   : std::filesystem::path(keep) / (name + ".heap.txt");
  std::ofstream(path) << script;
  const std::string cmd = std::string(ETB_HEAP_PLAY) + " " + std::to_string(start) + " < " + path.string();
  std::vector<long> faults;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    int pass = 0;
    long n = 0;
    while (std::fscanf(p, " pass %d faults %ld", &pass, &n) == 2) faults.push_back(n);
    pclose(p);
  }
  if (keep.empty()) std::filesystem::remove(path);
  return faults;
}
}  // namespace

int main(int argc, char** argv) {
  double start = 1 << 20;  // as a trace read leaves the mmap threshold (0.4-3 MiB)
  int passes = 5;
  std::string keep;
  std::vector<std::string> samples;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--start" && i + 1 < argc) start = std::atof(argv[++i]);
    else if (a == "--passes" && i + 1 < argc) passes = std::atoi(argv[++i]);
    else if (a == "--keep" && i + 1 < argc) keep = argv[++i];
    else samples.push_back(a);
  }
  if (samples.empty()) samples = {"mlp", "resnet18", "transformer", "dlrm", "lstm", "gpt", "conv_adamw"};
  std::printf("# fresh pages per iteration, model / glibc (mmap threshold at start %.0f bytes)\n", start);
  int status = 0;
  for (const std::string& name : samples) {
    const std::string file = std::string(ETB_SOURCE_DIR) + "/fleet_samples/" + name + "/" + name + ".et.json.gz";
    if (!std::filesystem::exists(file)) {
      std::fprintf(stderr, "%s: no such sample\n", file.c_str());
      status = 1;
      continue;
    }
    const etb::trace::Trace t = etb::trace::readTrace(file);
    const auto sel = etb::replay::selectNodes(t, etb::replay::chooseIteration(t, 0));
    const HeapScript script = etb::predict::heapScript(t, sel, t.children());
    const auto model = etb::predict::freshBytesPerPass(script, passes, start);
    const std::vector<long> glibc = glibcFaults(scriptText(script, passes), name, start, keep);
    std::printf("%-12s", name.c_str());
    for (int pass = 0; pass < passes; ++pass) {
      double pages = 0;
      for (double b : model[pass]) pages += b / 4096;
      std::printf(" %7ld/%-7s", std::lround(pages),
                  pass < static_cast<int>(glibc.size()) ? std::to_string(glibc[pass]).c_str() : "?");
    }
    std::printf("\n");
  }
  return status;
}
