// SPDX-License-Identifier: MIT
//
// Fresh pages on demand (et_replay --heap match). A page fault costs what the
// kernel's trap and the page's zeroing cost (11-15 us on some VMs), and a
// training process takes as many as its heap's history decides: glibc gives
// freed memory back above thresholds that follow that history, and where a
// block lands among the small objects around it decides where the heap can
// shrink. Two runs of one mlp replay faulted 154 and 1,510 times an
// iteration before its trace reader left the main heap, and no threshold
// set from outside reproduces another process's count: the count moves with
// the layout the earlier iterations left.
//
// This puts an allocator over libtorch's CPU one. Blocks of kMinBytes and up
// come from mappings of their own, kept by size when freed and handed out
// again to the next request of that size (glibc's heap and its history no
// longer decide whether a large block faults); smaller ones go to libtorch's
// allocator as before. A set share of each large block's pages is handed
// back to the kernel (MADV_DONTNEED) before the op gets it, so that its
// first write to them faults as a fresh page does: once every size has been
// mapped, an iteration's faults from large blocks are share x the pages they
// hold, the same every iteration.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace etb::replay {

// How many of a block's `pages` a share hands back: whole pages, the
// fraction carried on to the next block (`carry`, updated), at most the
// block. FreshPages hands back by it, and the predictor charges by it.
inline uint64_t wholePagesBack(double share, uint64_t pages, double& carry) {
  const double want = share * static_cast<double>(pages) + carry;
  const uint64_t back = std::min<uint64_t>(pages, static_cast<uint64_t>(want));
  carry = want - static_cast<double>(back);
  return back;
}

class FreshPages {
 public:
  // Blocks smaller than this share their pages with other blocks.
  static constexpr size_t kMinBytes = size_t{64} << 10;

  // Puts the allocator over c10's CPU one (once; later calls return the
  // same one). Blocks allocated before it are freed by their own deleter.
  static FreshPages& install();

  // The share (0..1) of each large block's pages handed back.
  void setShare(double share);
  // Pages of the large blocks handed out, and of those handed back, since
  // install().
  uint64_t pagesOffered() const;
  uint64_t pagesHandedBack() const;

  FreshPages(const FreshPages&) = delete;
  FreshPages& operator=(const FreshPages&) = delete;

 private:
  FreshPages() = default;
};

}  // namespace etb::replay
