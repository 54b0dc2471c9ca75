// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <sstream>

#include "replayer/report_text.h"
#include "tests/replayer/report_fixture.h"

namespace etb::replay {
namespace {

std::string render(const ReplayResult& r, size_t top = 20) {
  std::ostringstream os;
  printReport(r, os, top);
  return os.str();
}

TEST(ReportText, ShowsHeaderIterationsAndRatio) {
  const std::string out = render(testing::sampleResult());
  EXPECT_NE(out.find("trace: bench.json"), std::string::npos) << out;
  EXPECT_NE(out.find("3/4 operators replayed (75.0%)"), std::string::npos) << out;
  EXPECT_NE(out.find("replay"), std::string::npos);
  EXPECT_NE(out.find("original"), std::string::npos);
  // medians 10.9 and 10.0
  EXPECT_NE(out.find("1.090x"), std::string::npos) << out;
}

// --speed-probe's line: the probes over the run's fastest (10 us), and the
// iterations whose probe stayed within 1.2x of it (the first, second and
// fourth: 20, 21 and 22 ms); none without probes.
TEST(ReportText, SaysHowFarTheHostMovedUnderTheIterations) {
  ReplayResult r = testing::sampleResult();
  EXPECT_EQ(render(r).find("host speed"), std::string::npos);
  r.replay_iter_ms = summarize({20, 21, 40, 22});
  r.speed_probe_us = {10, 11, 25, 11.6};
  const std::string out = render(r);
  EXPECT_NE(out.find("probes 1.00-2.50x the run's fastest (median 1.13x); 3 of 4 iterations "
                     "within 1.2x, median 21.00 ms"),
            std::string::npos)
      << out;
  r.speed_probe_us.pop_back();  // not one per iteration: no line
  EXPECT_EQ(render(r).find("host speed"), std::string::npos);
}

TEST(ReportText, KindsBiggestDifferenceFirstAndRestSummed) {
  const std::string out = render(testing::sampleResult(), 2);
  // |diff|: mm 500, all_reduce 200, add_ 50; relu unknown goes last.
  const size_t mm = out.find("aten::mm"), ar = out.find("nccl:all_reduce");
  ASSERT_NE(mm, std::string::npos);
  ASSERT_NE(ar, std::string::npos);
  EXPECT_LT(mm, ar);
  EXPECT_NE(out.find("(2 more kinds)"), std::string::npos) << out;
  EXPECT_NE(out.find("+500.0"), std::string::npos) << out;
}

// A multi-rank report is rank 0's: another rank's skips (its own trace) were
// nowhere in it (a pipeline's stages replay different ops). A rank whose
// coverage falls short is named with its counts; complete ranks are not.
TEST(ReportText, AnotherRanksShortCoverageIsNamed) {
  ReplayResult r = testing::sampleResult();
  r.ranks[1].operators = 7, r.ranks[1].replayed = 5, r.ranks[1].comms = 2;
  r.ranks[1].comms_replayed = 2;
  std::string out = render(r);
  EXPECT_NE(out.find("rank 1: 5/7 operators replayed, 2 skipped; collectives 2/2"),
            std::string::npos) << out;
  r.ranks[1].replayed = 7;
  out = render(r);
  EXPECT_EQ(out.find("rank 1: 7/7"), std::string::npos) << out;
}

TEST(ReportText, SkippedCollectivesRanksAndSystem) {
  const std::string out = render(testing::sampleResult());
  EXPECT_NE(out.find("no kernel for CPU"), std::string::npos);
  EXPECT_NE(out.find("busbw(GB/s)"), std::string::npos);
  EXPECT_NE(out.find("0.84"), std::string::npos);
  EXPECT_NE(out.find("over 2 ranks"), std::string::npos) << out;
  EXPECT_NE(out.find("exposed comm(ms)"), std::string::npos);
  EXPECT_NE(out.find("peak rss 300 MiB"), std::string::npos) << out;
  EXPECT_EQ(out.find("gpu"), std::string::npos) << "no GPU figures given";
}

TEST(ReportText, EmptyResultPrintsHeaderAndSystem) {
  const std::string out = render(ReplayResult{});
  EXPECT_NE(out.find("0/0 operators replayed (100.0%)"), std::string::npos) << out;
  EXPECT_NE(out.find("# system:"), std::string::npos);
  EXPECT_EQ(out.find("nan"), std::string::npos);
}

// --heap match: the share of fresh pages set and the counts it was set by,
// or why nothing was set.
TEST(ReportText, HeapMatchShowsTheFreshShareAndFaults) {
  ReplayResult r = testing::sampleResult();
  HeapMatch h;
  h.target_faults = 574;
  h.start_faults = 16;
  h.offered_pages = 8212;
  h.share = 0.0699;
  h.faults = 575;
  h.fault_us = 11.4;
  h.steps = {{0, 0}, {0.0699, 575}};
  r.heap = h;
  std::string out = render(r);
  EXPECT_NE(out.find("blocks of 64 KiB and up kept, 7.0% of their 8212 pages/iter fresh: 575 "
                     "faults/iter against the original's 574 (glibc's own 16, a fault costs "
                     "11.40 µs here; counted 0.0%:0 7.0%:575)"),
            std::string::npos)
      << out;
  h = HeapMatch{};
  h.start_faults = 12;
  h.note = "the original's faults per step are unknown";
  r.heap = h;
  out = render(r);
  EXPECT_NE(out.find("left to glibc (the original's faults per step are unknown); 12 faults/iter"),
            std::string::npos)
      << out;
}

// Faults 3x and 500 apart without --heap match: the report names the flag.
TEST(ReportText, HeapsThatPartSuggestHeapMatch) {
  ReplayResult r = testing::sampleResult();
  r.original_system = OriginalSystem{};
  r.original_system->metrics.minor_faults_per_iter = 300;
  r.system.minor_faults_per_iter = 2300;
  EXPECT_NE(render(r).find("--heap match sets"), std::string::npos) << render(r);
  r.system.minor_faults_per_iter = 700;  // 2.3x apart
  EXPECT_EQ(render(r).find("--heap match sets"), std::string::npos) << render(r);
  r.system.minor_faults_per_iter = 2300;
  r.heap = HeapMatch{};  // asked for already
  EXPECT_EQ(render(r).find("--heap match sets"), std::string::npos) << render(r);
}

TEST(ReportText, UnknownOriginalSaysSo) {
  ReplayResult r = testing::sampleResult();
  r.original_iter_ms.reset();
  r.ranks.resize(1);
  const std::string out = render(r);
  EXPECT_NE(out.find("original: unknown"), std::string::npos) << out;
  EXPECT_EQ(out.find("over 1 ranks"), std::string::npos);
}

}  // namespace
}  // namespace etb::replay
