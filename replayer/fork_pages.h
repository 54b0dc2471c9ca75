// SPDX-License-Identifier: MIT
//
// After fork() the parent's private pages are shared with the child copy on
// write, and stay write-protected after the child has exited: the parent's
// next write to each takes a page fault. The host-time calibration runs in a
// child (replayer/host_plan.h); without this, the measured iterations after
// it paid those faults (a DLRM-like replay: 870 faults per iteration instead
// of 23, all of its embedding rows a few at a time, 6% of its time).
#pragma once

#include <cstddef>

namespace etb::replay {

// Writes to every resident page of this process's private writable mappings
// (one atomic add of zero per page: the data does not change, even where
// another thread writes the same byte), so that the write faults happen now,
// not in the measured iterations. Device files' mappings are left alone.
// Returns the pages touched.
size_t ownPagesAfterFork();

}  // namespace etb::replay
