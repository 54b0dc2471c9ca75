// SPDX-License-Identifier: MIT
// The heap model against glibc malloc's documented rules (mallopt(3),
// malloc.c): a request at or above the mmap threshold that no free chunk
// can hold is mapped (all fresh); freeing a
// mapped block raises the threshold to its size (at most 32 MiB) and the
// trim threshold to twice that; the heap's top is returned to the OS once
// the free space there reaches the trim threshold. Expected bytes are worked
// out by hand from those rules.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/model/trace.h"
#include "predictor/heap_model.h"
#include "predictor/predictor.h"
#include "replayer/op_selection.h"
#include "tests/predictor/profile_test_util.h"
#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::TraceBuilder;
constexpr double kMiB = 1024.0 * 1024;

TEST(HeapModel, AFreedMappingRaisesTheThresholdSoTheNextOneComesWarmFromTheHeap) {
  HeapModel h;
  const double b = 4 * kMiB;
  EXPECT_GE(h.allocate(1, b), b);  // above 128 KiB: mapped, every page fresh
  h.release(1);                    // threshold becomes ~4 MiB
  EXPECT_GE(h.allocate(2, b), b);  // the heap grows by it: fresh once
  h.release(2);                    // 4 MiB free at the top < 8 MiB trim threshold
  EXPECT_EQ(h.allocate(3, b), 0);  // reused, warm
}

// malloc.c: _int_malloc tries the bins and the top chunk before sysmalloc,
// which alone maps requests at or above the threshold: a large request
// that fits a free chunk of the heap reuses it (nothing fresh).
TEST(HeapModel, ARequestAboveTheThresholdThatFitsAFreeChunkReusesIt) {
  HeapModel h;
  h.allocate(1, 100 * 1024);  // below 128 KiB: heap, fresh
  h.allocate(2, 100 * 1024);
  h.allocate(3, 16);  // keeps the two from the top (no trim)
  h.release(1);
  h.release(2);  // 200 KiB free below the top
  EXPECT_EQ(h.allocate(4, 150 * 1024), 0);
}

TEST(HeapModel, FreeSpaceAtTheTopBeyondTheTrimThresholdIsReturnedAndFaultsAgain) {
  HeapModel h;
  h.allocate(1, 4 * kMiB);
  h.release(1);  // threshold 4 MiB, trim threshold 8 MiB
  for (uint64_t k = 2; k < 5; ++k) h.allocate(k, 3 * kMiB);  // 9 MiB of heap
  for (uint64_t k = 2; k < 5; ++k) h.release(k);             // 9 MiB free at the top: trimmed
  EXPECT_LT(h.heapBytes(), 1 * kMiB);
  // All of it fresh again but the 128 KiB pad the trim keeps (M_TOP_PAD).
  EXPECT_NEAR(h.allocate(5, 3 * kMiB), 3 * kMiB - 128 * 1024, 64);
}

// malloc.c's _int_free checks the top after merging: the size it compares
// with FASTBIN_CONSOLIDATION_THRESHOLD (64 KiB) is the freed chunk merged
// with its free neighbours, so a small block freed between a large free
// chunk and the top trims the heap.
TEST(HeapModel, ASmallFreeThatJoinsLargeFreeSpaceToTheTopTrimsIt) {
  HeapModel h;
  h.allocate(1, 4 * kMiB);
  h.release(1);  // threshold 4 MiB, trim threshold 8 MiB
  for (uint64_t k = 2; k < 5; ++k) h.allocate(k, 3 * kMiB);
  h.allocate(5, 16 * 1024);                      // between them and the top
  for (uint64_t k = 2; k < 5; ++k) h.release(k);  // 9 MiB free, held off the top
  EXPECT_GT(h.heapBytes(), 9 * kMiB);
  h.release(5);  // 16 KiB freed: merged, 9 MiB reach the top
  EXPECT_LT(h.heapBytes(), 1 * kMiB);
}

TEST(HeapModel, BlocksAboveThe32MiBCeilingAreMappedEveryTime) {
  HeapModel h;
  const double b = 40 * kMiB;
  for (uint64_t k = 1; k < 4; ++k) {
    EXPECT_GE(h.allocate(k, b), b);
    h.release(k);
  }
}

// A process whose start-up freed a mapped block (et_replay's trace reader
// leaves 0.4-3 MiB) trims only above twice that: an iteration swinging
// 1000 KiB of small blocks reuses its pages, where a new process's 128 KiB
// trim threshold returns them every time (all but the 128 KiB pad fresh).
TEST(HeapModel, AHeapStartedAboveTheInitialThresholdKeepsASwingBelowTwiceIt) {
  for (const double start : {0.0, 1.25 * kMiB}) {
    HeapModel h(start);
    const double block = 100 * 1024;  // below 128 KiB: from the heap either way
    for (uint64_t k = 1; k <= 10; ++k) h.allocate(k, block);
    for (uint64_t k = 1; k <= 10; ++k) h.release(k);
    double again = 0;
    for (uint64_t k = 11; k <= 20; ++k) again += h.allocate(k, block);
    if (start == 0) {
      EXPECT_NEAR(again, 10 * (block + HeapModel::kHeader) - 128 * 1024, 4096);
    } else {
      EXPECT_EQ(again, 0);
    }
  }
}

// mm producing a [rows, 1024] float output, then relu reading it: the mm
// output dies after relu, relu's after the step that is last to use it.
trace::Trace chain(int64_t rows) {
  TraceBuilder b;
  const auto a = b.tensor({rows, 1024}), w = b.tensor({1024, 1024}), y = b.tensor({rows, 1024});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {a, w}, {y});
  const auto r = b.tensor({rows, 1024});
  b.op("aten::relu(Tensor self) -> Tensor", {y}, {r});
  return b.finish();
}

std::vector<double> fresh(const trace::Trace& t) {
  const auto sel = replay::selectNodes(t, replay::chooseIteration(t, 0));
  return freshBytesPerStep(t, sel, t.children());
}

TEST(HeapModel, SmallIterationsRunWarmOnceTheHeapHasGrown) {
  const trace::Trace t = chain(256);  // 1 MiB tensors
  for (double f : fresh(t)) EXPECT_EQ(f, 0);
}

// A profile with one memory curve and a first touch of 3 us a page.
HwProfile touchProfile() {
  HwProfile hw;
  hw.dispatch_us = 1;
  hw.view_us = 0.5;
  hw.bandwidth["unary"] = {{1000, 2}, {4000, 4}};
  hw.memory = {4096, 3.0};
  return hw;
}

TEST(HeapModel, OutputsAboveTheCeilingFaultInEveryIteration) {
  const trace::Trace t = chain(10240);  // 40 MiB tensors: mapped on every call
  const std::vector<double> f = fresh(t);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_GE(f[0], 40 * kMiB);
  EXPECT_LT(f[0], 41 * kMiB);
  EXPECT_GE(f[1], 40 * kMiB);
}

TEST(HeapModel, ThePredictorChargesTheProfilesFirstTouchCostPerFreshPage) {
  const trace::Trace t = chain(10240);
  HwProfile hw;
  hw.dispatch_us = 1;
  hw.view_us = 0.5;
  hw.bandwidth["unary"] = {{1000, 2}, {4000, 4}};
  const Prediction cold = predictIteration({&t}, hw, {});
  hw.memory = {4096, 3.0};
  const Prediction warm_plus_touch = predictIteration({&t}, hw, {});
  const RankPrediction& r = warm_plus_touch.ranks.front();
  const double pages = 40 * kMiB / 4096;
  EXPECT_NEAR(r.ops[1].first_touch_us, 3.0 * pages, 3.0 * 2);  // relu's 40 MiB output
  EXPECT_NEAR(r.ops[1].us - cold.ranks.front().ops[1].us, r.ops[1].first_touch_us, 1e-6);
}

// --faults original: the original's count, spread over the blocks of 64 KiB
// and up as et_replay --heap match hands their pages back. The chain's relu
// output is 256 pages of the step's blocks; at any count below the blocks'
// pages the iteration pays that count at the profile's cost, and a count
// beyond them pays every page once (relu's 256). Catches the count charged
// per op instead of per iteration, the share not capped, the model's pages
// added to the original's.
TEST(HeapModel, TheOriginalsFaultsAreChargedOncePerIteration) {
  const trace::Trace t = chain(256);  // 1 MiB tensors: the heap model charges none
  HwProfile hw = touchProfile();
  PredictOptions o;
  o.original_faults = {100};
  const Prediction p = predictIteration({&t}, hw, o);
  EXPECT_EQ(p.faults_from, "original");
  double touch = 0;
  for (const OpPrediction& op : p.ranks.front().ops) touch += op.first_touch_us;
  EXPECT_NEAR(touch, 100 * 3.0, 1e-6);
  o.original_faults = {1e7};
  const Prediction all = predictIteration({&t}, hw, o);
  EXPECT_NEAR(all.ranks.front().ops[1].first_touch_us, 256 * 3.0, 1e-6);
}

// A conv whose weight is beyond the 32 MiB ceiling: oneDNN's copy of the
// weight, which the trace does not show, is a fresh mapping at every call.
// Its other blocks (the input's copy, the blocked and the plain output, 1 MiB
// each) may come warm from the heap.
TEST(HeapModel, AConvsHiddenWeightCopyFaultsLikeAnOutput) {
  TraceBuilder b;
  const int64_t c = 2048;
  const double weight = c * c * 9 * 4.0, activation = 8 * c * 4 * 4 * 4.0;
  const auto x = b.tensor({8, c, 4, 4}), w = b.tensor({c, c, 3, 3}), y = b.tensor({8, c, 4, 4});
  b.op("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
       "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
       {x, w, trace::makeNone(b.trace()), test::intList(b.trace(), {1, 1}),
        test::intList(b.trace(), {1, 1}), test::intList(b.trace(), {1, 1}), trace::makeInt(b.trace(), 1)},
       {y});
  const std::vector<double> f = fresh(b.finish());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_GE(f[0], weight);
  EXPECT_LE(f[0], weight + 3 * activation + 4 * 4096.0);
}

// libtorch 1.13's CPU batch norm backward: grad_input made by empty_like,
// made again on the contiguous path, and only the second returned (and
// written). 40 MiB buffers sit above the 32 MiB ceiling: each written one
// faults in whole every iteration, so one buffer's pages, not two.
trace::Trace supersededGradInput(int64_t second_rows, bool read_first) {
  TraceBuilder b;
  const auto x = b.tensor({10240, 1024}), dy = b.tensor({10240, 1024});
  const auto first = b.tensor({10240, 1024}), dx = b.tensor({second_rows, 1024});
  const trace::NodeId bn = b.op("aten::native_batch_norm_backward(Tensor grad_out, Tensor input) -> Tensor",
                                {dy, x}, {dx});
  b.under(bn);
  b.op("aten::empty_like(Tensor self) -> Tensor", {x}, {first});
  if (read_first) b.op("aten::copy_(Tensor self, Tensor src) -> Tensor", {first, dy}, {first});
  b.op("aten::empty_like(Tensor self) -> Tensor", {x}, {dx});
  b.under(2);
  const auto r = b.tensor({second_rows, 1024});
  b.op("aten::relu(Tensor self) -> Tensor", {dx}, {r});
  return b.finish();
}

TEST(HeapModel, ABufferAllocatedAgainAsTheResultIsNeverWritten) {
  const std::vector<double> f = fresh(supersededGradInput(10240, false));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_GE(f[0], 40 * kMiB);
  EXPECT_LT(f[0], 41 * kMiB);
  // The original's faults are shared by the written buffers alone: half to
  // the batch norm's result, half to relu's.
  const trace::Trace t = supersededGradInput(10240, false);
  const auto sel = replay::selectNodes(t, replay::chooseIteration(t, 0));
  const std::vector<double> o =
      originalFaultBytesPerStep(heapScript(t, sel, t.children()), 5000, 4096, 64 * 1024);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_DOUBLE_EQ(o[0], 2500 * 4096.0);
  EXPECT_DOUBLE_EQ(o[1], 2500 * 4096.0);
}

// A data loader's batch as PARAM's resnet trace records it: set_(self,
// <Storage>, 0, size, stride) makes an empty tensor a view of a 40 MiB
// storage it is handed (et_replay takes it from a leaf). Nothing is
// allocated: the view is free, the relu that reads it faults its own output
// in (above the 32 MiB ceiling, every iteration). Catches set_'s storage
// counted as a new output (73 MiB of first touch on that trace's set_).
TEST(HeapModel, SetToAGivenStorageAllocatesNothing) {
  TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto self = b.tensor({0}), batch = b.tensor({10240, 1024});
  b.op("aten::set_.source_Storage_storage_offset(Tensor(a!) self, Storage source, SymInt storage_offset, "
       "SymInt[] size, SymInt[] stride=[]) -> Tensor(a!)",
       {self, trace::makeString(t, "<Storage>"), trace::makeInt(t, 0), test::intList(t, {10240, 1024}),
        test::intList(t, {1024, 1})},
       {batch});
  const auto r = b.tensor({10240, 1024});
  b.op("aten::relu(Tensor self) -> Tensor", {batch}, {r});
  const std::vector<double> f = fresh(b.finish());
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0], 0);
  EXPECT_GE(f[1], 40 * kMiB);
  EXPECT_LT(f[1], 41 * kMiB);
}

// Releases: what glibc hands back is the written pages of an unmapped block
// (request and two headers, in whole pages) and, at a trim, everything
// written above the 128 KiB it keeps (M_TOP_PAD); a block never written
// hands back nothing. Catches a release counted at allocation, a trim
// counted from the heap's size rather than its written part, an unwritten
// block charged.
TEST(HeapModel, UnmapsAndTrimsReleaseTheirWrittenPages) {
  HeapModel h;
  h.allocate(1, 4 * kMiB);
  EXPECT_TRUE(h.takeReleases().empty());
  h.release(1);  // threshold 4 MiB, trim threshold 8 MiB
  EXPECT_EQ(h.takeReleases(), std::vector<double>{std::ceil((4 * kMiB + 32) / 4096)});
  for (uint64_t k = 3; k < 6; ++k) h.allocate(k, 3 * kMiB);
  for (uint64_t k = 3; k < 6; ++k) h.release(k);  // 9 MiB free at the top: one trim
  EXPECT_EQ(h.takeReleases(), std::vector<double>{std::ceil((3 * (3 * kMiB + 16) - 128 * 1024) / 4096)});
  h.allocate(2, 16 * kMiB, false);  // above the threshold, mapped, never written
  h.release(2);
  EXPECT_TRUE(h.takeReleases().empty());
}

// et_replay --heap match hands back the share of each block's pages in whole
// pages, carrying the remainder to the next block (FreshPages): 77 faults
// over two 256-page blocks are 38.5 pages each, handed back as 38 then 39.
// Catches rounding per block (38 + 38), fractional pages, a share not of the
// iteration's pages.
TEST(HeapModel, TheReplaysHandBackIsWholePagesWithTheRemainderCarried) {
  const trace::Trace t = chain(256);  // a 1 MiB output in each of two steps
  const auto sel = replay::selectNodes(t, replay::chooseIteration(t, 0));
  StepReleases rel;
  originalFaultBytesPerStep(heapScript(t, sel, t.children()), 77, 4096, 64 * 1024, &rel);
  ASSERT_EQ(rel.size(), 2u);
  EXPECT_EQ(rel[0], std::vector<double>{38});
  EXPECT_EQ(rel[1], std::vector<double>{39});
}

// The heap model's releases in a replayed iteration: 40 MiB blocks are
// mapped at every call, and both (mm's output after relu read it, relu's
// after its last use) are unmapped in relu's step.
TEST(HeapModel, BlocksAboveTheCeilingAreReleasedWhereTheyDie) {
  const trace::Trace t = chain(10240);
  const auto sel = replay::selectNodes(t, replay::chooseIteration(t, 0));
  StepReleases rel;
  freshBytesPerStep(t, sel, t.children(), 0, 1, &rel);
  ASSERT_EQ(rel.size(), 2u);
  EXPECT_TRUE(rel[0].empty());
  const double pages = std::ceil((40 * kMiB + 32) / 4096);
  EXPECT_EQ(rel[1], (std::vector<double>{pages, pages}));
}

// The release curve: linear between measured counts (the step down past
// the kernel's per-page flush ceiling kept), proportional below the first,
// the last segment's slope beyond the last; absent, nothing.
TEST(HeapModel, AReleaseCostsItsPagesOnTheMeasuredCurve) {
  MemoryFacts m;
  EXPECT_EQ(releaseUs(m, 10), 0);
  m.release = {{1, 5}, {33, 101}, {34, 29}, {1024, 205}};
  EXPECT_DOUBLE_EQ(releaseUs(m, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(releaseUs(m, 17), 5 + 16 * 3.0);
  EXPECT_DOUBLE_EQ(releaseUs(m, 33), 101);
  EXPECT_DOUBLE_EQ(releaseUs(m, 34), 29);
  EXPECT_NEAR(releaseUs(m, 2048), 205 + 1024 * 176.0 / 990, 1e-9);
  EXPECT_EQ(releaseUs(m, 0), 0);
  // The first touch alone: the 64 MiB region's unmapping (16,384 pages on
  // the last segment) taken out of the measured fault.
  m.fault_us_per_page = 3;
  const double unmap = 205 + (16384 - 1024) * 176.0 / 990;
  EXPECT_NEAR(touchUsPerPage(m), 3 - unmap / 16384, 1e-12);
  m.release.clear();
  EXPECT_EQ(touchUsPerPage(m), 3);
}

// A fault episode's excess over the hot-loop curves: each measured point
// less the release curve and the first touch at its pages, linear in pages
// between counts and level beyond, linear in the gap from 0 and in its log
// between positive gaps, level beyond the last; never negative.
TEST(HeapModel, AFaultEpisodeCostsItsExcessOverTheHotCurves) {
  MemoryFacts m;
  m.fault_us_per_page = 3;
  m.release = {{1, 5}, {33, 101}, {34, 29}, {1024, 205}};
  EXPECT_EQ(episodeExtraUs(m, 0, 4), 0);  // no table
  const double touch = 3 - (205 + (16384 - 1024) * 176.0 / 990) / 16384;
  const auto price = [&](double pages, double release) { return release + pages * touch; };
  // Gap 0: 20 us over the curves for a page, 40 for 32 (release 5 + 31 x 3).
  // 1 ms: 60 and 100. 10 ms: 80, and one below the curves (clamped).
  m.episode = {{0, 1, price(1, 5) + 20},        {0, 32, price(32, 98) + 40},
               {1000, 1, price(1, 5) + 60},     {1000, 32, price(32, 98) + 100},
               {10000, 1, price(1, 5) + 80},    {10000, 32, price(32, 98) - 7}};
  EXPECT_NEAR(episodeExtraUs(m, 0, 1), 20, 1e-9);
  EXPECT_NEAR(episodeExtraUs(m, 0, 16.5), 30, 1e-9);
  EXPECT_NEAR(episodeExtraUs(m, 0, 500), 40, 1e-9);   // level beyond 32
  EXPECT_NEAR(episodeExtraUs(m, 0, 0.25), 20, 1e-9);  // level below 1
  EXPECT_NEAR(episodeExtraUs(m, 100, 1), 24, 1e-9);   // a tenth of the way to 1 ms
  EXPECT_NEAR(episodeExtraUs(m, std::sqrt(1e7), 1), 70, 1e-9);  // half way in log
  EXPECT_NEAR(episodeExtraUs(m, 1e9, 1), 80, 1e-9);
  EXPECT_EQ(episodeExtraUs(m, 1e9, 32), 0);  // below the curves: nothing
  EXPECT_NEAR(episodeExtraUs(m, std::sqrt(1e7), 32), 50, 1e-9);  // 100 .. 0
  EXPECT_EQ(episodeExtraUs(m, 100, 0), 0);  // no pages faulted in
}

// The predictor charges an op that faults pages in the episode's excess at
// the predicted time since the last op that did (the iteration's first as
// after a long stretch), apart from its first touch and releases; the
// profile keeps the table through its JSON and refuses a bad point by name.
TEST(HeapModel, ThePredictorChargesAFaultEpisodeByTheTimeSinceTheLast) {
  const trace::Trace t = chain(256);
  HwProfile hw = touchProfile();
  PredictOptions o;
  o.original_faults = {77};  // 38 pages, then 39
  const Prediction without = predictIteration({&t}, hw, o);
  const double touch = touchUsPerPage(hw.memory);  // 3: no release curve
  // 10 us over the curves at gap 0 and 50 after 10 ms, whatever the pages.
  hw.memory.episode = {{0, 1, touch + 10},     {0, 32, 32 * touch + 10},
                       {10000, 1, touch + 50}, {10000, 32, 32 * touch + 50}};
  const HwProfile back = profileFromJson(profileToJson(hw), "hand.json");
  ASSERT_EQ(back.memory.episode.size(), 4u);
  EXPECT_DOUBLE_EQ(back.memory.episode[3].after_us, 10000);
  EXPECT_DOUBLE_EQ(back.memory.episode[3].pages, 32);
  const Prediction with = predictIteration({&t}, back, o);
  const auto& a = without.ranks.front().ops, &b = with.ranks.front().ops;
  ASSERT_EQ(b.size(), 2u);
  EXPECT_GT(b[0].fresh_pages, 0);
  EXPECT_GT(b[1].fresh_pages, 0);
  EXPECT_NEAR(b[0].episode_us, 50, 1e-9);  // the first: as after a long stretch
  EXPECT_NEAR(b[1].episode_us, 10, 1e-9);  // right after one
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a[i].episode_us, 0);
    EXPECT_DOUBLE_EQ(b[i].first_touch_us, a[i].first_touch_us);
    EXPECT_NEAR(b[i].us - a[i].us, b[i].episode_us, 1e-6);
  }
  // Without faults (the heap model: 1 MiB tensors stay warm) nothing.
  const Prediction warm = predictIteration({&t}, back, PredictOptions{});
  for (const auto& op : warm.ranks.front().ops) EXPECT_EQ(op.episode_us, 0);
  hw.memory.episode[1].pages = 0.5;
  expectRefusedNaming(hw, "memory.episode");
  hw.memory.episode[1].pages = 1;  // a second point for one page at gap 0
  expectRefusedNaming(hw, "memory.episode");
}

// The predictor charges each step's releases on the profile's curve, as
// part of the op's time, and the profile keeps the curve through its JSON
// (refusing a count below one page by name).
TEST(HeapModel, ThePredictorChargesEachReleaseOnTheProfilesCurve) {
  const trace::Trace t = chain(256);
  HwProfile hw = touchProfile();
  PredictOptions o;
  o.original_faults = {77};
  const Prediction without = predictIteration({&t}, hw, o);
  hw.memory.release = {{1, 5}, {33, 101}, {34, 29}, {1024, 205}};
  const HwProfile back = profileFromJson(profileToJson(hw), "hand.json");
  ASSERT_EQ(back.memory.release.size(), 4u);
  EXPECT_DOUBLE_EQ(back.memory.release[2].bytes, 34);
  EXPECT_DOUBLE_EQ(back.memory.release[2].us, 29);
  const Prediction with = predictIteration({&t}, back, o);
  const auto& a = without.ranks.front().ops, &b = with.ranks.front().ops;
  ASSERT_EQ(b.size(), 2u);
  // 38 pages, then 39, on the segment from 34 (29 us) to 1024 (205 us).
  EXPECT_NEAR(b[0].release_us, 29 + 4 * 176.0 / 990, 1e-9);
  EXPECT_NEAR(b[1].release_us, 29 + 5 * 176.0 / 990, 1e-9);
  EXPECT_EQ(a[0].release_us, 0);
  // The first touch is then the fault alone (the unmapping its measure
  // included is charged as a release).
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GT(a[i].first_touch_us, 0);
    EXPECT_NEAR(b[i].first_touch_us, a[i].first_touch_us * touchUsPerPage(back.memory) / 3.0, 1e-9);
    EXPECT_NEAR(b[i].us - a[i].us, b[i].release_us + b[i].first_touch_us - a[i].first_touch_us, 1e-6);
  }
  hw.memory.release[0].bytes = 0.5;
  expectRefusedNaming(hw, "memory.release");
}

TEST(HeapModel, ATemporaryThatIsReadOrOfAnotherSizeIsWritten) {
  // Read by a later call: both buffers' pages.
  const std::vector<double> read = fresh(supersededGradInput(10240, true));
  ASSERT_EQ(read.size(), 2u);
  EXPECT_GE(read[0], 80 * kMiB);
  // A result of another size (here 36 MiB) does not replace the first.
  const std::vector<double> other = fresh(supersededGradInput(9216, false));
  ASSERT_EQ(other.size(), 2u);
  EXPECT_GE(other[0], 76 * kMiB);
}

// An in-place op whose backward needs its input's old value (silu_) is
// recorded with autograd's copy of it as its first child: a clone of self.
// A replay (no autograd) makes no copy, so the script allocates nothing for
// it: a 40 MiB copy, above the 32 MiB ceiling, would fault in whole every
// iteration. A clone of another tensor is the op's own work and is kept.
trace::Trace inPlaceWithClone(bool of_self) {
  TraceBuilder b;
  const auto x = b.tensor({10240, 1024}), other = b.tensor({10240, 1024});
  const auto copy = b.tensor({10240, 1024});
  const trace::NodeId op = b.op("aten::silu_(Tensor(a!) self) -> Tensor(a!)", {x}, {x});
  b.under(op);
  b.op("aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
       {of_self ? x : other, trace::makeNone(b.trace())}, {copy});
  return b.finish();
}

TEST(HeapModel, AutogradsCopyOfAnInPlaceOpsInputIsNotAllocated) {
  const std::vector<double> skipped = fresh(inPlaceWithClone(true));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0], 0);
  const std::vector<double> kept = fresh(inPlaceWithClone(false));
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_GE(kept[0], 40 * kMiB);
  EXPECT_LT(kept[0], 41 * kMiB);
}

}  // namespace
}  // namespace etb::predict
