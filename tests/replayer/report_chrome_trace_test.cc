// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "core/base/file_io.h"
#include "replayer/chrome_trace.h"
#include "tests/replayer/report_fixture.h"
#include "tests/test_util.h"

namespace etb::replay {
namespace {
using nlohmann::json;

TEST(ChromeTrace, OneCompleteEventPerTimelineEntry) {
  const ReplayResult r = testing::sampleResult("aten::\"quoted\"\n");
  const std::string path = test::makeTempDir("chrome_trace") + "/t.json";
  writeChromeTrace(r, path);
  const json j = json::parse(readFileMaybeGzip(path));  // must be valid JSON
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::vector<json> xs;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "X") xs.push_back(e);
  }
  ASSERT_EQ(xs.size(), r.timeline.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const TimelineEvent& t = r.timeline[i];
    EXPECT_EQ(xs[i]["name"], t.name);
    EXPECT_EQ(xs[i]["pid"], t.rank);
    EXPECT_EQ(xs[i]["tid"], t.tid);
    EXPECT_DOUBLE_EQ(xs[i]["ts"].get<double>(), t.start_us);
    EXPECT_DOUBLE_EQ(xs[i]["dur"].get<double>(), t.dur_us);
    EXPECT_EQ(xs[i]["args"]["node_id"], t.node_id);
  }
}

TEST(ChromeTrace, NamesRanksAndLanes) {
  const json j = chromeTraceJson(testing::sampleResult());
  std::set<std::string> names;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "M") names.insert(e["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"rank 0", "rank 1", "compute",
                                          "communication"}));
}

TEST(ChromeTrace, EmptyTimelineIsStillATrace) {
  const json j = chromeTraceJson(ReplayResult{});
  EXPECT_TRUE(j["traceEvents"].is_array());
  EXPECT_TRUE(j["traceEvents"].empty());
}

}  // namespace
}  // namespace etb::replay
