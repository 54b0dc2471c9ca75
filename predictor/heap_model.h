// SPDX-License-Identifier: MIT
//
// Which of a replay's allocations land on fresh pages. et_replay allocates
// each op's outputs through c10's CPU allocator (glibc malloc) and frees a
// tensor after its last use. glibc serves a request of at least the mmap
// threshold with a mapping of its own (every page fresh) and the rest from
// the heap, which it shrinks - returning the pages to the OS - whenever the
// free space at its top reaches the trim threshold; the mmap threshold
// follows the largest mapped block freed so far (at most 32 MiB) and the
// trim threshold is twice it. A model whose live memory swings by more than
// that within an iteration (activations built up by the forward pass and
// freed by the backward) faults its heap in again every iteration; a
// microbenchmark that frees and re-allocates one buffer never does. The
// predictor charges the profile's measured cost per fresh page to the op
// whose allocation touches it (hypothesis (a) of issue 12, measured: 50 MB
// of page faults per resnet18 / transformer iteration, none for dlrm).
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model/trace.h"
#include "replayer/heap_match.h"
#include "replayer/op_selection.h"

namespace etb::predict {

class HeapModel {
 public:
  // A heap whose mmap threshold was already raised to `mmap_threshold` (a
  // mapped block of that size was freed; the trim threshold is then twice
  // it); 0 or less than the initial 128 KiB: a new process's.
  explicit HeapModel(double mmap_threshold = 0);

  // glibc's defaults (malloc.c), as the replayer's heap match knows them:
  // DEFAULT_MMAP_THRESHOLD_MAX on 64-bit, and the initial thresholds and top
  // pad of 128 KiB.
  static constexpr double kMmapMax = static_cast<double>(replay::kGlibcMaxMmapThreshold);
  static constexpr double kInitial = static_cast<double>(replay::kGlibcInitialMmapThreshold);
  static constexpr double kHeader = 16, kPage = 4096;  // chunk header; mapping granule

  // Allocates `bytes` under `key`; returns the bytes of never-touched pages
  // the allocation spans (the caller writes all of it). An allocation the
  // caller never writes (`written` false) takes its place in the heap but
  // touches no page.
  double allocate(uint64_t key, double bytes, bool written = true);
  void release(uint64_t key);
  double heapBytes() const { return top_; }
  // The written pages handed back to the OS since the last call, one entry
  // per release (a mapped block unmapped, the heap's top trimmed).
  std::vector<double> takeReleases() { return std::exchange(released_, {}); }

 private:
  struct Chunk {
    double size = 0;
    bool free = true;
  };
  struct Live {
    double where = 0;  // heap address, or the size of a mapped block
    bool mapped = false;
    bool written = true;
  };
  double fromHeap(double bytes);
  bool fitsInHeap(double bytes) const;
  void maybeTrim();

  std::map<double, Chunk> chunks_;  // by address, tiling [0, top_)
  std::unordered_map<uint64_t, Live> live_;
  double top_ = 0;      // the heap's end (brk)
  double touched_ = 0;  // pages below this are mapped and written
  double mmap_threshold_ = kInitial, trim_threshold_ = kInitial;
  std::vector<double> released_;  // pages of each release not yet taken
};

// The heap calls et_replay makes for the trace's tensors, in order: the
// leaves (allocated before the iterations and kept), then one iteration's
// calls per selected step. A call with `first_pass_only` is made in the
// first iteration only (an object the op's first call leaves behind).
struct HeapCall {
  size_t key = 0;  // one storage instance: an allocation and its free share it
  double bytes = 0;
  bool alloc = true;
  bool first_pass_only = false;
  bool written = true;  // false: allocated and freed unwritten (a superseded buffer)
};
struct HeapScript {
  std::vector<HeapCall> leaves;
  std::vector<std::vector<HeapCall>> steps;
};
HeapScript heapScript(const trace::Trace& trace, const std::vector<replay::SelectedNode>& steps,
                      const std::vector<std::vector<uint32_t>>& children, int threads = 1);

// HeapModel run over `passes` iterations of the script: the fresh bytes of
// each step in each pass.
std::vector<std::vector<double>> freshBytesPerPass(const HeapScript& script, int passes,
                                                   double start_threshold = 0);

// What a release costs is the other half of a fresh page (HwProfile's
// memory.release): the pages of each release a step makes, one list per
// step (`releases` below).
using StepReleases = std::vector<std::vector<double>>;

// Fresh bytes each selected step of one iteration touches, as et_replay runs
// it (warm-up iterations first: the returned figures are of a later one).
// A step allocates the outputs of its node and of the node's recorded
// children whose storage is new; children's tensors that are not the node's
// outputs are freed when the step ends, and every tensor the iteration
// produced is freed after the last step that uses it.
// An op's own buffers that the trace does not show (hidden_buffers.h) are
// allocated and freed where the op's call does.
// `start_threshold`: the replay process's mmap threshold before its
// iterations (HeapModel's constructor); `threads`: the replay's intra-op
// threads. `releases` (optional): the pages of each release glibc makes in
// each step of that iteration (unmapped blocks, trims).
std::vector<double> freshBytesPerStep(const trace::Trace& trace,
                                      const std::vector<replay::SelectedNode>& steps,
                                      const std::vector<std::vector<uint32_t>>& children,
                                      double start_threshold = 0, int threads = 1,
                                      StepReleases* releases = nullptr);

// Fresh bytes each selected step touches when the iteration faults
// `faults_per_iter` times (the original's count, metrics sidecar) as
// et_replay --heap match gives it: a share of the pages of every block of
// `min_block` bytes and up that the step allocates (replay::FreshPages),
// the share that many faults over those pages per iteration (at most all).
// `releases` (optional): the pages et_replay hands back for each block, per
// step (the share of its pages, whole pages, the remainder carried on to
// the next block as FreshPages carries it).
std::vector<double> originalFaultBytesPerStep(const HeapScript& script, double faults_per_iter,
                                              double page_bytes, double min_block,
                                              StepReleases* releases = nullptr);

}  // namespace etb::predict
