// SPDX-License-Identifier: MIT
// probeMmapThreshold against glibc's rule (mallopt(3), M_MMAP_THRESHOLD):
// freeing a mapped block raises the threshold to the block's size (its
// chunk: the request and a 16-byte header, in whole pages). In an
// executable of its own: the threshold only rises, and other tests' frees
// would set it; libtorch's start-up already has, so the test first reads
// where it is and then frees a block well above it.
#include <gtest/gtest.h>

#include <cmath>
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
  // The first probe step, 128 KiB x 2^(k/4), at or above the chunk; or the
  // next one, when the probe's own smaller blocks (each freed to the top of
  // the heap with glibc's 128 KiB pad) left a top large enough to serve it.
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

}  // namespace
}  // namespace etb::replay
