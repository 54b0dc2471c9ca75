// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <string>

#include "core/base/file_io.h"
#include "replayer/report_html.h"
#include "tests/replayer/report_fixture.h"
#include "tests/test_util.h"

namespace etb::replay {
namespace {

const char* kHostile = "<script>alert('x')</script>";

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(ReportHtml, IsSelfContained) {
  const std::string html = reportHtml(testing::sampleResult());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
}

TEST(ReportHtml, ShowsHeadlineChartsAndTables) {
  const std::string html = reportHtml(testing::sampleResult());
  EXPECT_NE(html.find("10.90 ms"), std::string::npos);   // replay median
  EXPECT_NE(html.find("10.00 ms"), std::string::npos);   // original median
  EXPECT_NE(html.find("75.0 %"), std::string::npos);     // coverage
  // Two charts; the kind chart has replay + original bars for 3 kinds and a
  // replay bar for the kind with no original.
  EXPECT_EQ(countOf(html, "<svg "), 2u);
  // 2 spread boxes, 4 replay bars, 3 original bars
  EXPECT_EQ(countOf(html, "<rect "), 2u + 4 + 3);
  EXPECT_NE(html.find("fbgemm::jagged_to_padded"), std::string::npos);
  EXPECT_NE(html.find("all_reduce"), std::string::npos);
  EXPECT_NE(html.find("busbw"), std::string::npos);
}

TEST(ReportHtml, EscapesTraceStrings) {
  ReplayResult r = testing::sampleResult(kHostile);
  r.trace_path = "a\"b<c>.json";
  r.coverage.skipped_ops[0].reason = "bad & <b>worse</b>";
  r.coverage.skipped_by_reason = {{"bad & <b>worse</b>", 1}};
  const std::string html = reportHtml(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"),
            std::string::npos);
  EXPECT_NE(html.find("a&quot;b&lt;c&gt;.json"), std::string::npos);
  EXPECT_NE(html.find("bad &amp; &lt;b&gt;worse"), std::string::npos);
}

TEST(ReportHtml, WithoutOriginalOrRanks) {
  ReplayResult r = testing::sampleResult();
  r.original_iter_ms.reset();
  r.ranks.clear();
  r.collectives.clear();
  for (KindStat& k : r.kinds) k.original_us = -1;
  const std::string html = reportHtml(r);
  EXPECT_NE(html.find("unknown"), std::string::npos);
  EXPECT_EQ(html.find("Collectives"), std::string::npos);
  EXPECT_EQ(html.find("<h2>Ranks"), std::string::npos);
}

TEST(ReportHtml, EmptyResultRendersWithoutNaN) {
  const std::string html = reportHtml(ReplayResult{});
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(html.find("nan"), std::string::npos);
  EXPECT_EQ(html.find("inf"), std::string::npos);
}

TEST(ReportHtml, WritesFile) {
  const std::string path = test::makeTempDir("report_html") + "/r.html";
  writeReportHtml(testing::sampleResult(), path);
  EXPECT_EQ(readFileMaybeGzip(path), reportHtml(testing::sampleResult()));
}

}  // namespace
}  // namespace etb::replay
