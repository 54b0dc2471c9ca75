// SPDX-License-Identifier: MIT
//
// The original's page faults (et_replay --heap match). glibc gives freed
// memory back to the kernel above two thresholds (a chunk at least the mmap
// threshold is unmapped when freed; a heap top longer than the trim threshold
// is trimmed) and both follow the process's history, while where small
// objects sit among the tensors decides where the heap can shrink. A small
// GPT replayed with 2300 minor faults per iteration against the original's 35
// (3-6 ms of a 32 ms step), while resnet18's original faulted 19,400 times a
// step (half its step at 13 us a fault) against its replay's 13,500. The
// recorder's metrics sidecar holds the original's faults per step; this gives
// the replay as many: libtorch's large blocks are kept by size and handed out
// again (FreshPages: glibc's heap no longer decides whether they fault), and
// a share of their pages is handed back to the kernel before the op writes
// them, the share set from the pages those blocks hold and corrected on the
// counts. Setting glibc's thresholds instead (this did until 2026-11) gave
// counts that moved with the layout earlier probes left: resnet18 read
// 30,764 faults at one threshold as a probe and 6,915 when set there at the
// end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace etb::replay {

struct HeapMatch {
  double target_faults = -1;  // the original's per iteration
  double start_faults = -1;   // the replay's with glibc's own thresholds
  double fixed_faults = -1;   // with large blocks kept, before any page was handed back
  double offered_pages = -1;  // whole pages per iteration in blocks of 64 KiB and up
  double share = -1;          // of those handed back to the kernel; -1 = heap left to glibc
  double faults = -1;         // the replay's at that share
  double fault_us = -1;       // one fault's cost, measured here
  double iteration_ms = 0;    // the replay's, with glibc's own thresholds
  struct Step {
    double share = 0;
    double faults = 0;
  };
  std::vector<Step> steps;  // each share counted, in order: 0 first, the kept last
  std::string note;         // why nothing was set, or what fell short
};

// Runs heapMatchIterations() iterations through `run_iteration` whatever the
// outcome, so that the ranks of a job stay in step (each matches its own
// original). `target` < 0 (no sidecar figure) or a C library other than
// glibc leave the heap as it is, with the reason in `note`.
HeapMatch matchHeapFaults(double target, const std::function<void()>& run_iteration);
int heapMatchIterations();

inline constexpr double kQuarterOctave = 1.189207115002721;  // 2^(1/4)

// This process's glibc mmap threshold: blocks asked for in steps of `step`
// (a ratio) from 128 KiB until one is mapped (mallinfo2's mapped bytes
// grow), in a thread with a new arena, whose free chunks cannot serve them:
// the first step at or above the threshold. Freeing the mapped block raises
// a threshold glibc still adjusts to that block's size: the probe leaves it
// a step above where it was. 0 without glibc's mallinfo2 (glibc < 2.33),
// or when nothing up to 32 MiB was mapped.
double probeMmapThreshold(double step = kQuarterOctave);

// glibc's mmap threshold: its default, and the ceiling of its adjustment
// (64-bit), which mallopt(M_MMAP_THRESHOLD) does not exceed either.
inline constexpr size_t kGlibcInitialMmapThreshold = size_t{128} << 10;
inline constexpr size_t kGlibcMaxMmapThreshold = size_t{32} << 20;

namespace detail {
// A first write to a fresh 4 KiB page of anonymous memory, microseconds
// (the kernel's trap and the page's zeroing; best of 3 x 2048 pages).
double measureFaultCostUs();
// The share of the offered pages to hand back for `target` faults per
// iteration, from a count `faults` at share `at`: the pages handed back
// fault once each, on top of what the heap faults by itself.
double nextShare(double target, double faults, double at, double offered_pages);
}  // namespace detail

}  // namespace etb::replay
