// SPDX-License-Identifier: MIT
// etb_heap_play START_THRESHOLD < SCRIPT (run by heap_vs_glibc.cc): plays a
// heap script through this process's glibc malloc as et_replay's tensors
// call it (c10's CPU allocator: posix_memalign with 64-byte alignment, then
// the op writes the whole block), and prints the minor page faults of each pass. A process of
// its own, so that the heap it starts from is a new one's; START_THRESHOLD
// raises the mmap threshold first, as the trace reader does in et_replay.
// Script lines: "L key bytes" (a leaf), "A key bytes", "F key", "P" (a pass
// ends; its faults are printed as "pass N faults F").
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
// Live blocks by key, outside the heap being measured (no map to grow).
constexpr unsigned long kMaxKeys = 1ul << 20;
void* live[kMaxKeys];

long minorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

void* allocateAndWrite(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 64, bytes == 0 ? 1 : bytes) != 0) {
    std::fprintf(stderr, "etb_heap_play: posix_memalign(%zu) failed\n", bytes);
    std::exit(1);
  }
  // The op's output is written whole: one store per page is enough.
  auto* c = static_cast<volatile char*>(p);
  for (size_t o = 0; o < bytes; o += 4096) c[o] = 1;
  if (bytes > 0) c[bytes - 1] = 1;
  return p;
}
}  // namespace

int main(int argc, char** argv) {
  const double start = argc > 1 ? std::atof(argv[1]) : 0;
  if (start > 0) {
    void* volatile p = std::malloc(static_cast<size_t>(start));
    std::free(p);
  }
  constexpr int kMaxPasses = 64;
  static long faults[kMaxPasses];
  char line[128];
  int pass = 0;
  long faults0 = minorFaults();
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    unsigned long key = 0;
    double bytes = 0;
    if (line[0] == 'P') {
      // Printed at the end: stdout's buffer is a heap block too.
      if (pass < kMaxPasses) faults[pass++] = minorFaults() - faults0;
      faults0 = minorFaults();
      continue;
    }
    const bool alloc = line[0] == 'L' || line[0] == 'A';
    if ((alloc && std::sscanf(line + 1, "%lu %lf", &key, &bytes) != 2) ||
        (!alloc && std::sscanf(line + 1, "%lu", &key) != 1) || key >= kMaxKeys) {
      std::fprintf(stderr, "etb_heap_play: bad script line: %s", line);
      return 2;
    }
    if (alloc) {
      live[key] = allocateAndWrite(static_cast<size_t>(bytes));
    } else {
      std::free(live[key]);
      live[key] = nullptr;
    }
  }
  for (int i = 0; i < pass; ++i) std::printf("pass %d faults %ld\n", i, faults[i]);
  return 0;
}
