// SPDX-License-Identifier: MIT
//
// The original's page faults (et_replay --heap match). glibc gives freed
// memory back to the kernel above two thresholds (a chunk at least the mmap
// threshold is unmapped when freed; a heap top longer than the trim threshold
// is trimmed) and both follow the process's history: a chunk freed from
// mmap raises them. A long-lived training process has usually raised them
// far above a fresh replay's, so the replay takes fresh zeroed pages from the
// kernel where the original reused its own: a small GPT replayed with 2300
// minor faults per iteration against the original's 35 (3-6 ms of a 32 ms
// step), while a conv net's original faulted 6000 times per step itself. The
// recorder's metrics sidecar holds the original's faults per step; this sets
// the replay's thresholds so that its faults per iteration come near those,
// searched over a fixed number of iterations after the warm-up.
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
  size_t mmap_threshold = 0;  // set (trim threshold twice that); 0 = left to glibc
  size_t glibc_threshold = 0; // glibc's own, read before any was set (0: not read)
  double faults = -1;         // the replay's at the chosen threshold
  double fault_us = -1;       // one fault's cost, measured here
  double iteration_ms = 0;    // the replay's, with glibc's own thresholds
  struct Probe {
    size_t mmap_threshold = 0;
    double faults = 0;
  };
  std::vector<Probe> probes;
  std::string note;  // why nothing was set, if so
};

// Runs heapMatchIterations() iterations through `run_iteration` whatever the
// outcome, so that the ranks of a job stay in step (each matches its own
// original). `target` < 0 (no sidecar figure) or a C library other than
// glibc leave the heap as it is, with the reason in `note`.
// Setting a threshold ends glibc's own adjustment for good, so the first
// probe fixes glibc's own threshold where it stands (probeMmapThreshold) and
// the others search the side of it the original lies on: a threshold is
// kept only where it came nearer to the original than glibc's own. (Probing
// the sqrt(2) ladder alone once kept 32,774 faults per iteration for
// resnet18 against the original's 20,058, where glibc's own gave 18,842:
// the count falls off a cliff between two steps of the ladder, and glibc's
// threshold sat between them.)
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

namespace detail {
// Whether the faults the replay takes beyond (or short of) the original's
// cost at least 3% of an iteration.
bool worthMatching(double faults, double target, double fault_us, double iteration_us);
// A first write to a fresh 4 KiB page of anonymous memory, microseconds
// (the kernel's trap and the page's zeroing; best of 3 x 2048 pages).
double measureFaultCostUs();
// The candidate mmap thresholds, smallest first (32 KiB to 32 MiB in steps
// of sqrt(2); glibc refuses one above 32 MiB
// (its largest)).
std::vector<size_t> heapThresholds();
}  // namespace detail

}  // namespace etb::replay
