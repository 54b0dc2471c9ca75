// SPDX-License-Identifier: MIT
// --heap match (replayer/heap_match.h) and the pages a fork leaves shared
// (replayer/fork_pages.h). Expected fault counts are pages in closed form: a
// buffer of N bytes written once from fresh memory faults N / 4 KiB times.
// The heap tests set glibc's thresholds, which no later test should inherit:
// each runs in a child of its own (EXPECT_EXIT), whose stderr says what it saw.
#include "replayer/heap_match.h"

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
#include <iterator>
#include <string>

#include "replayer/fork_pages.h"
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

// One "iteration": a fresh block, written once, freed.
void blockIteration() {
  void* p = std::malloc(kBlock);
  std::memset(p, 1, kBlock);
  asm volatile("" : : "r"(p) : "memory");  // the compiler may not drop the pair
  std::free(p);
}

TEST(HeapMatch, ThresholdsStepBySqrtTwoFrom32KiBToGlibcsLargest) {
  const std::vector<size_t> t = detail::heapThresholds();
  ASSERT_GE(t.size(), 2u);
  EXPECT_EQ(t.front(), size_t{32} << 10);
  EXPECT_EQ(t.back(), size_t{32} << 20);
  for (size_t i = 1; i < t.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(t[i]) / static_cast<double>(t[i - 1]), std::sqrt(2.0), 0.05);
    EXPECT_EQ(t[i] % 4096, 0u);
  }
}

// Fixed at 1 MiB, every 8 MiB block is mapped fresh (2048 faults an
// iteration); an original that faulted not at all needs a threshold above it.
TEST(HeapMatch, RaisesTheThresholdWhenTheOriginalFaultedLess) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EXIT(
      {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        const HeapMatch m = matchHeapFaults(0, blockIteration);
        std::fprintf(stderr, "start %.0f, chosen %zu, faults %.0f\n", m.start_faults,
                     m.mmap_threshold, m.faults);
        const bool ok = m.start_faults > 0.9 * kBlockPages && m.mmap_threshold > kBlock &&
                        m.faults < 64;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// glibc's own threshold rises past the block after its first free (no
// faults after); an original that faulted once per page of it needs one below.
TEST(HeapMatch, LowersTheThresholdWhenTheOriginalFaultedMore) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EXIT(
      {
        blockIteration();
        const HeapMatch m = matchHeapFaults(kBlockPages, blockIteration);
        std::fprintf(stderr, "start %.0f, chosen %zu, faults %.0f, probes %zu\n", m.start_faults,
                     m.mmap_threshold, m.faults, m.probes.size());
        const bool ok = m.start_faults < 0.5 * kBlockPages && m.mmap_threshold > 0 &&
                        m.mmap_threshold <= kBlock && m.faults > 0.9 * kBlockPages &&
                        m.faults < 1.25 * kBlockPages;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Two blocks a step of the ladder apart: with the threshold between them
// (3.3 MiB, set before the match, so glibc's own) only the larger is mapped
// afresh each iteration; at the ladder's 2.83 MiB both are, at 4 MiB
// neither. An original between the first two counts is nearer glibc's own
// than any step: the match keeps it. (A search of the ladder alone kept
// 2.83 MiB: both blocks' faults, further off than where it started.)
constexpr size_t kBelow = size_t{3} << 20, kAbove = size_t{3850} << 10;
constexpr double kAbovePages = kAbove / 4096.0;

void touchPages(size_t bytes) {
  auto* p = static_cast<volatile unsigned char*>(std::malloc(bytes));
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;  // one write per page: faults, little else
  std::free(const_cast<unsigned char*>(p));
}

TEST(HeapMatch, KeepsGlibcsOwnThresholdWhenNoStepComesNearer) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EXIT(
      {
        mallopt(M_MMAP_THRESHOLD, static_cast<int>(3.3 * (1 << 20)));
        mallopt(M_TRIM_THRESHOLD, static_cast<int>(6.6 * (1 << 20)));
        const double both = (kBelow + kAbove) / 4096.0;
        const double target = kAbovePages + 0.4 * (both - kAbovePages);
        const HeapMatch m = matchHeapFaults(target, [] {
          touchPages(kBelow);
          touchPages(kAbove);
        });
        std::fprintf(stderr, "start %.0f, glibc's %zu, chosen %zu, faults %.0f, target %.0f;",
                     m.start_faults, m.glibc_threshold, m.mmap_threshold, m.faults, target);
        for (const HeapMatch::Probe& p : m.probes) {
          std::fprintf(stderr, " %zu:%.0f", p.mmap_threshold, p.faults);
        }
        std::fprintf(stderr, "\n");
        const bool ok = m.glibc_threshold > kBelow && m.glibc_threshold < kAbove &&
                        m.mmap_threshold == m.glibc_threshold && m.probes.size() >= 2 &&
                        std::fabs(m.faults - kAbovePages) < 0.1 * kAbovePages;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// 1000 faults more than the original at 1 us each: 1 ms, worth it in a 20 ms
// iteration (5%), not in a 50 ms one (2%); fewer counts the same.
TEST(HeapMatch, MatchesOnlyWhatCostsThreePercentOfAnIteration) {
  EXPECT_TRUE(detail::worthMatching(1500, 500, 1.0, 20e3));
  EXPECT_TRUE(detail::worthMatching(500, 1500, 1.0, 20e3));
  EXPECT_FALSE(detail::worthMatching(1500, 500, 1.0, 50e3));
  EXPECT_FALSE(detail::worthMatching(500, 1500, 1.0, 50e3));
  EXPECT_GT(detail::measureFaultCostUs(), 0.0);
}

TEST(HeapMatch, NoTargetLeavesTheHeapAloneAndStillRunsEveryIteration) {
  int runs = 0;
  const HeapMatch m = matchHeapFaults(-1, [&] { ++runs; });
  EXPECT_EQ(runs, heapMatchIterations());
  EXPECT_EQ(m.mmap_threshold, 0u);
  EXPECT_TRUE(m.probes.empty());
  EXPECT_NE(m.note.find("unknown"), std::string::npos) << m.note;
}

// Through et_replay: a trace whose only op makes an 8 MiB tensor, a heap that
// maps it fresh every iteration (a fixed 1 MiB threshold) and an original
// that did not fault: the threshold goes above the tensor, the faults away.
// Not all of them: the replay's own small allocations can land beside the
// freed block and leave it an alignment slack short of the next request, so
// the heap grows by a fresh block now and then (one in four iterations under
// ctest here, none when the same binary ran from another directory). At most
// one such block in the four measured iterations; without the match every
// one of them faults.
TEST(HeapMatch, ReplayMatchesTheOriginalsFaultsPerIteration) {
  if (const std::string why = whyNotCountable(); !why.empty()) GTEST_SKIP() << why;
  const trace::Trace trace = test::onesTrace(static_cast<int64_t>(kBlock / 4));
  EXPECT_EXIT(
      {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        ReplayOptions o = test::replayOptions(2, 4, test::Verify::kNo);
        o.match_heap = true;
        o.original_system = OriginalSystem{};
        o.original_system->metrics.minor_faults_per_iter = 0;
        const ReplayResult r = test::replayLocal(trace, o);
        const double f = r.system.minor_faults_per_iter;
        std::fprintf(stderr, "heap set %d, threshold %zu, start %.0f, faults/iter %.0f (%s)\n",
                     r.heap ? 1 : 0, r.heap ? r.heap->mmap_threshold : 0,
                     r.heap ? r.heap->start_faults : -1, f, r.heap ? r.heap->note.c_str() : "");
        const bool ok = r.heap && r.heap->start_faults > 0.9 * kBlockPages &&
                        r.heap->mmap_threshold > kBlock && f >= 0 &&
                        f <= kBlockPages / 4 + 64;
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
