// SPDX-License-Identifier: MIT
//
// Durations in the terminal and HTML reports read in s / ms / µs by
// magnitude, a seconds-long op included (it once printed as "118579602").
#include <gtest/gtest.h>

#include <sstream>

#include "replayer/report_html.h"
#include "replayer/report_text.h"
#include "replayer/report_util.h"
#include "tests/replayer/report_fixture.h"

namespace etb::replay {
namespace {
using detail::formatDuration;

TEST(ReportUnits, PicksUnitByMagnitude) {
  EXPECT_EQ(formatDuration(118579602), "118.6 s");
  EXPECT_EQ(formatDuration(2.5e6), "2.500 s");
  EXPECT_EQ(formatDuration(12345), "12.35 ms");
  EXPECT_EQ(formatDuration(1000), "1.000 ms");
  EXPECT_EQ(formatDuration(950), "950.0 \u00b5s");
  EXPECT_EQ(formatDuration(0.25), "0.250 \u00b5s");
  EXPECT_EQ(formatDuration(-3500), "-3.500 ms");
  EXPECT_EQ(formatDuration(0), "0.000 \u00b5s");
}

TEST(ReportUnits, RoundingCarriesIntoTheNextUnit) {
  EXPECT_EQ(formatDuration(999.96), "1.000 ms");
  EXPECT_EQ(formatDuration(999960), "1.000 s");
}

TEST(ReportUnits, PadCountsMicroAsOneColumn) {
  EXPECT_EQ(detail::padLeft("1.0 \u00b5s", 8), "  1.0 \u00b5s");
  EXPECT_EQ(detail::padLeft("1.0 ms", 8), "  1.0 ms");
  EXPECT_EQ(detail::padLeft("toolong", 3), "toolong");
}

ReplayResult withSecondsLongOp() {
  ReplayResult r = testing::sampleResult();
  r.ops[0].replay_us = 118579602;
  r.ops[0].original_us = 120000000;
  r.kinds[0].replay_us = 118579602;
  r.kinds[0].original_us = 120000000;
  r.replay_iter_ms = summarize({118600, 118700});
  r.original_iter_ms = summarize({120100});
  return r;
}

TEST(ReportUnits, TextShowsSecondsLongOpInSeconds) {
  std::ostringstream os;
  printReport(withSecondsLongOp(), os);
  const std::string out = os.str();
  EXPECT_NE(out.find("118.6 s"), std::string::npos) << out;
  EXPECT_NE(out.find("120.0 s"), std::string::npos) << out;
  EXPECT_NE(out.find("-1.420 s"), std::string::npos) << out;  // diff
  EXPECT_NE(out.find("118.7 s"), std::string::npos) << out;   // iteration max
  EXPECT_EQ(out.find("118579602"), std::string::npos) << out;
  EXPECT_EQ(out.find("118579.6"), std::string::npos) << out;
}

TEST(ReportUnits, HtmlShowsSecondsLongOpInSeconds) {
  const std::string html = reportHtml(withSecondsLongOp());
  EXPECT_NE(html.find("118.6 s"), std::string::npos);
  EXPECT_NE(html.find("s per iteration"), std::string::npos);
  EXPECT_EQ(html.find("118579602"), std::string::npos);
  EXPECT_EQ(html.find("us per iteration"), std::string::npos);
}

TEST(ReportUnits, SmallOpsStayInMicroseconds) {
  std::ostringstream os;
  printReport(testing::sampleResult(), os);
  EXPECT_NE(os.str().find("400.0 \u00b5s"), std::string::npos) << os.str();  // aten::relu
  EXPECT_NE(reportHtml(testing::sampleResult()).find("3.000 ms"), std::string::npos);
}

}  // namespace
}  // namespace etb::replay
