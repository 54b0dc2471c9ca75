// SPDX-License-Identifier: MIT
// --heap match (replayer/heap_match.h, replayer/fresh_pages.h) and the pages
// a fork leaves shared (replayer/fork_pages.h). Expected fault counts are
// pages in closed form: a buffer of N bytes written once from fresh memory
// faults N / 4 KiB times, and a share s of its pages handed back s x N / 4 KiB.
// The heap tests set glibc's thresholds, which no later test should inherit:
// each runs in a child of its own (EXPECT_EXIT), whose stderr says what it saw.
#include "replayer/heap_match.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "replayer/fork_pages.h"
#include "replayer/fresh_pages.h"
#include "replayer/replayer.h"
#include "tests/replayer/replay_helpers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {

constexpr size_t kBlock = size_t{8} << 20;  // one allocation per iteration
constexpr double kBlockPages = kBlock / 4096.0;

uint64_t faultsNow() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_minflt);
}

// Page faults are per 4 KiB only without transparent huge pages on every
// mapping; a heap with a free chunk of the block's size serves it without
// asking the kernel whatever the thresholds.
std::string whyNotCountable() {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string mode((std::istreambuf_iterator<char>(thp)), std::istreambuf_iterator<char>());
  if (mode.find("[always]") != std::string::npos) return "transparent huge pages are always on";
  if (mallinfo2().fordblks >= kBlock) return "this process's heap already holds a free block";
  return "";
}

// One iteration through libtorch's allocator: an 8 MiB tensor, written once, freed.
void tensorIteration() {
  at::Tensor t = at::empty({static_cast<int64_t>(kBlock / 4)}, at::kFloat);
  t.fill_(1);
}

double faultsOf(const std::function<void()>& fn) {
  const uint64_t before = faultsNow();
  fn();
  return static_cast<double>(faultsNow() - before);
}

// A freed 8 MiB block is kept and comes back for the next request of its
// size without a fault; a share of its pages handed back faults that share.
// Blocks under 64 KiB are not offered, and a block in use keeps its data
// (only a block handed out again has pages handed back). Planted faults it
// catches: the block not kept (every page faults), the share ignored or
// applied twice, pages of another block handed back, small blocks offered.
TEST(FreshPages, HandsBackTheSetShareOfALargeBlocksPages) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EXIT(
      {
        FreshPages& fresh = FreshPages::install();
        fresh.setShare(0);
        tensorIteration();  // the heap grows to hold the block once
        const double none = faultsOf(tensorIteration);
        fresh.setShare(0.25);
        const uint64_t back = fresh.pagesHandedBack();
        const double quarter = faultsOf(tensorIteration);
        const uint64_t quarter_back = fresh.pagesHandedBack() - back;
        fresh.setShare(0);
        const uint64_t offered = fresh.pagesOffered();
        { at::Tensor small = at::empty({8 << 10}, at::kFloat).fill_(1); }  // 32 KiB
        const uint64_t small_offered = fresh.pagesOffered() - offered;
        at::Tensor kept = at::empty({static_cast<int64_t>(kBlock / 4)}, at::kFloat).fill_(7);
        fresh.setShare(1);
        at::Tensor beside = at::empty({static_cast<int64_t>(kBlock / 4)}, at::kFloat);
        const double all = faultsOf([&] { beside.fill_(1); });
        const bool kept_intact = kept.eq(7).all().item<bool>();
        std::fprintf(stderr, "faults none %.0f, quarter %.0f (%llu back), small offered %llu, "
                     "all %.0f, neighbour intact %d\n",
                     none, quarter, static_cast<unsigned long long>(quarter_back),
                     static_cast<unsigned long long>(small_offered), all, kept_intact ? 1 : 0);
        const bool ok = none < 16 && std::fabs(quarter_back - kBlockPages / 4) <= 1 &&
             std::fabs(quarter - kBlockPages / 4) < 0.05 * kBlockPages / 4 + 8 &&
             small_offered == 0 && all > 0.95 * kBlockPages && kept_intact;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The share for a target from one count: what the count lacks, over the
// pages offered, added to the share it was counted at; clamped to [0, 1].
TEST(HeapMatch, NextShareAddsWhatTheCountLacksOverThePagesOffered) {
  EXPECT_DOUBLE_EQ(detail::nextShare(512, 0, 0, 2048), 0.25);
  EXPECT_DOUBLE_EQ(detail::nextShare(512, 600, 0.25, 2048), 0.25 - 88.0 / 2048);
  EXPECT_DOUBLE_EQ(detail::nextShare(1e7, 0, 0, 2048), 1.0);
  EXPECT_DOUBLE_EQ(detail::nextShare(0, 100, 0, 2048), 0.0);
  EXPECT_DOUBLE_EQ(detail::nextShare(100, 0, 0, 0), 0.0);
}

// A heap fixed at 1 MiB maps the 8 MiB block afresh every iteration (2048
// faults); an original that did not fault gets none: the block is kept and
// nothing handed back.
TEST(HeapMatch, KeepsTheBlockWhenTheOriginalFaultedLess) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EXIT(
      {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        const HeapMatch m = matchHeapFaults(0, tensorIteration);
        std::fprintf(stderr, "start %.0f, fixed %.0f, share %.3f, faults %.0f\n", m.start_faults,
                     m.fixed_faults, m.share, m.faults);
        const bool ok = m.start_faults > 0.9 * kBlockPages && m.share == 0 && m.faults < 32;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// A threshold either maps the 8 MiB block afresh every iteration (2048
// faults) or keeps it in the heap (none, where the heap reuses its hole);
// an original that faulted 700 times an iteration gets 700.
TEST(HeapMatch, GivesTheOriginalsFaultsBetweenWhatThresholdsGive) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EXIT(
      {
        tensorIteration();
        constexpr double kTarget = 700;
        const HeapMatch m = matchHeapFaults(kTarget, tensorIteration);
        std::fprintf(stderr, "start %.0f, offered %.0f, share %.3f, faults %.0f, steps %zu\n",
                     m.start_faults, m.offered_pages, m.share, m.faults, m.steps.size());
        const bool ok = std::fabs(m.offered_pages - kBlockPages) <= 1 &&
                        std::fabs(m.share - kTarget / kBlockPages) < 0.05 &&
                        std::fabs(m.faults - kTarget) < 0.1 * kTarget && m.steps.size() == 4 &&
                        m.steps.back().share == m.share;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(HeapMatch, AFaultCostsMoreThanNothing) { EXPECT_GT(detail::measureFaultCostUs(), 0.0); }

TEST(HeapMatch, NoTargetLeavesTheHeapAloneAndStillRunsEveryIteration) {
  int runs = 0;
  const HeapMatch m = matchHeapFaults(-1, [&] { ++runs; });
  EXPECT_EQ(runs, heapMatchIterations());
  EXPECT_LT(m.share, 0);
  EXPECT_TRUE(m.steps.empty());
  EXPECT_NE(m.note.find("unknown"), std::string::npos) << m.note;
}

// Through et_replay: a trace whose only op makes an 8 MiB tensor, a heap that
// maps it fresh every iteration (a fixed 1 MiB threshold), and originals
// that faulted not at all and a quarter of its pages: the replay's measured
// iterations fault as they did.
double replayFaultsAgainst(double target, HeapMatch* heap) {
  const trace::Trace trace = test::onesTrace(static_cast<int64_t>(kBlock / 4));
  ReplayOptions o = test::replayOptions(2, 4, test::Verify::kNo);
  o.match_heap = true;
  o.original_system = OriginalSystem{};
  o.original_system->metrics.minor_faults_per_iter = target;
  const ReplayResult r = test::replayLocal(trace, o);
  if (r.heap) *heap = *r.heap;
  std::fprintf(stderr, "target %.0f: heap %d, start %.0f, share %.3f, faults/iter %.0f (%s)\n",
               target, r.heap ? 1 : 0, heap->start_faults, heap->share,
               r.system.minor_faults_per_iter, heap->note.c_str());
  return r.system.minor_faults_per_iter;
}

TEST(HeapMatch, ReplayFaultsAsTheOriginalDidPerIteration) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EXIT(
      {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        HeapMatch none;
        HeapMatch quarter;
        const double f0 = replayFaultsAgainst(0, &none);
        const double f4 = replayFaultsAgainst(kBlockPages / 4, &quarter);
        const bool ok = none.start_faults > 0.9 * kBlockPages && none.share == 0 && f0 >= 0 &&
                        f0 < 64 && quarter.share > 0 &&
                        std::fabs(f4 - kBlockPages / 4) < 0.1 * kBlockPages / 4;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Per-op faults (OpStat::minor_faults) in closed form: glibc maps a request
// above 32 MiB afresh whatever its thresholds, so the ones() step faults
// once per 4 KiB page of its 40 MiB output every iteration. Planted faults
// it catches: the count missing or taken over the wrong step (the root's
// step, or the whole iteration), counted in the timed iterations only
// (absent), or left in place with a single warm-up (where nothing settled).
TEST(StepFaults, AFreshOutputFaultsOncePerPageInItsOwnStep) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  constexpr size_t kBig = size_t{40} << 20;
  const trace::Trace trace = test::onesTrace(static_cast<int64_t>(kBig / 4));
  const ReplayResult r = test::replayLocal(trace, test::replayOptions(3, 1, test::Verify::kNo));
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_NEAR(r.ops[0].minor_faults, kBig / 4096.0, kBig / 4096.0 * 0.05);
  EXPECT_LT(test::replayLocal(trace, test::replayOptions(1, 1, test::Verify::kNo)).ops[0].minor_faults, 0)
      << "no settled warm-up counted";
}

// A child that exits at once still leaves the parent's pages write-protected:
// each first write after it faults, unless they were owned again.
TEST(ForkPages, WritesAfterAForkFaultNoMoreOnceTheParentOwnsItsPages) {
  constexpr size_t kBytes = size_t{32} << 20;
  constexpr double kPages = kBytes / 4096.0;
  void* mem = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  madvise(mem, kBytes, MADV_NOHUGEPAGE);  // faults per 4 KiB page
  auto* bytes = static_cast<unsigned char*>(mem);
  for (size_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  auto forkAndWait = [] {
    const pid_t pid = fork();
    if (pid == 0) _exit(0);
    int status = 0;
    waitpid(pid, &status, 0);
  };
  auto faultsWritingEveryPage = [&] {
    const uint64_t before = faultsNow();
    for (size_t i = 0; i < kBytes; i += 4096) bytes[i] = static_cast<unsigned char>(i * 7);
    return static_cast<double>(faultsNow() - before);
  };
  forkAndWait();
  const double unowned = faultsWritingEveryPage();
  if (unowned < 0.9 * kPages) {
    munmap(mem, kBytes);
    GTEST_SKIP() << "this kernel does not keep pages write-protected after the child exits ("
                 << unowned << " faults for " << kPages << " pages)";
  }
  forkAndWait();
  EXPECT_GE(ownPagesAfterFork(), static_cast<size_t>(kPages));
  EXPECT_LT(faultsWritingEveryPage(), 0.05 * kPages);
  size_t wrong = 0;
  for (size_t i = 0; i < kBytes; ++i) wrong += bytes[i] != static_cast<unsigned char>(i * 7);
  EXPECT_EQ(wrong, 0u) << "owning the pages changed their data";
  munmap(mem, kBytes);
}

}  // namespace
}  // namespace etb::replay
