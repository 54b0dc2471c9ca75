// SPDX-License-Identifier: MIT
// probeMmapThreshold against glibc's rule (mallopt(3), M_MMAP_THRESHOLD):
// freeing a mapped block raises the threshold to the block's size (its
// chunk: the request and a 16-byte header, in whole pages). In an
// executable of its own: the threshold only rises, and other tests' frees
// would set it; libtorch's start-up already has, so the test first reads
// where it is and then frees a block well above it.
#include <gtest/gtest.h>

#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "replayer/heap_match.h"

namespace etb::replay {
namespace {

TEST(HeapProbe, ReadsTheThresholdAFreedMappingSet) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "the probe reads glibc's mallinfo2";
#endif
  const double before = probeMmapThreshold();
  ASSERT_GT(before, 0) << "nothing up to 32 MiB was mapped";
  const double block = 2.5 * before;
  if (block > 32 << 20) GTEST_SKIP() << "the threshold is already near its 32 MiB ceiling";
  void* volatile p = std::malloc(static_cast<size_t>(block));  // above it: mapped
  std::free(p);
  const double chunk = std::ceil((block + 16) / 4096) * 4096;
  // The first probe step, 128 KiB x 2^(k/4), at or above the chunk, or the
  // next (the request's 16-byte header).
  const double step = 131072 * std::pow(2.0, std::ceil(4 * std::log2(chunk / 131072) - 1e-9) / 4);
  const double next = step * std::pow(2.0, 0.25);
  const double first = probeMmapThreshold();
  EXPECT_GE(first, step * (1 - 1e-9));
  EXPECT_LE(first, next * (1 + 1e-9));
  // The probe left the threshold at its own last block: it reads that again
  // or one step above.
  const double second = probeMmapThreshold();
  EXPECT_GE(second, first * (1 - 1e-9));
  EXPECT_LE(second, first * std::pow(2.0, 0.25) * (1 + 1e-9));
}

// glibc serves a request from a free chunk that fits before it maps one: a
// probe among the main heap's free chunks reads their size, not the
// threshold. A 16 MiB chunk freed in the middle of the heap, and the
// threshold fixed at 1 MiB: the probe reads 1 MiB (a step of 2^(1/4) from
// 128 KiB), not 16. In a child: fixing the threshold ends glibc's own
// adjustment for the rest of the process.
TEST(HeapProbe, ReadsTheThresholdPastTheHeapsFreeChunks) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "the probe reads glibc's mallinfo2";
#endif
  EXPECT_EXIT(
      {
        mallopt(M_MMAP_THRESHOLD, 24 << 20);  // a 16 MiB block from the heap
        const size_t mapped = mallinfo2().hblkhd;
        void* volatile big = std::malloc(16 << 20);
        // A block after it keeps it off the top (the first blocks asked for
        // may come from free chunks below it).
        static void* guards[4096];
        int n = 0;
        while (n < 4096 && (guards[n++] = std::malloc(4096)) < static_cast<void*>(big)) {
        }
        const bool in_heap =
            mallinfo2().hblkhd == mapped && guards[n - 1] > static_cast<void*>(big);
        std::free(big);
        const size_t free_bytes = mallinfo2().fordblks;
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        const double read = probeMmapThreshold();
        std::fprintf(stderr, "16 MiB block in the heap %d, free bytes %zu, read %.0f\n", in_heap,
                     free_bytes, read);
        if (!in_heap || free_bytes < (16u << 20)) std::_Exit(2);
        for (int i = 0; i < n; ++i) std::free(guards[i]);
        const double mib = 1 << 20;  // the steps are products: allow their rounding
        std::_Exit(read >= mib * (1 - 1e-9) && read <= mib * kQuarterOctave * (1 + 1e-9) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace etb::replay
