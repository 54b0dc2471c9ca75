// SPDX-License-Identifier: MIT
//
// The original's system metrics (the recorder's sidecar): reading it, finding
// it beside a trace, every fleet sample carrying one, and the reports showing
// the original beside the replay.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "replayer/original_metrics.h"
#include "replayer/report_html.h"
#include "replayer/report_json.h"
#include "replayer/report_text.h"
#include "tests/replayer/report_fixture.h"
#include "tests/test_util.h"

namespace etb::replay {
namespace {
namespace fs = std::filesystem;

std::string writeFile(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

constexpr const char* kSidecar = R"({"schema": "etbench.metrics/1",
  "window": "plain steps 3..12", "same_process_as_trace": true,
  "cpu_util_pct": 97.5, "peak_rss_bytes": 262144000, "minor_faults_per_step": 826.4,
  "threads": {"intra_op": 1, "os_threads": 3},
  "gpu": {"gpu_util_pct": 81.0, "gpu_mem_bytes": 1073741824, "gpu_power_w": 250.5},
  "device_properties": [{"id": 0, "name": "H100"}]})";

TEST(OriginalMetrics, ReadsEveryField) {
  const std::string dir = test::makeTempDir("orig_metrics");
  const OriginalSystem o = readOriginalMetrics(writeFile(dir, "x.metrics.json", kSidecar));
  EXPECT_DOUBLE_EQ(o.metrics.cpu_util_pct, 97.5);
  EXPECT_EQ(o.metrics.peak_rss_bytes, 262144000u);
  EXPECT_DOUBLE_EQ(o.metrics.minor_faults_per_iter, 826.4);
  EXPECT_EQ(o.threads, 1);
  EXPECT_EQ(o.os_threads, 3);
  EXPECT_EQ(o.window, "plain steps 3..12");
  EXPECT_TRUE(o.same_process);
  ASSERT_TRUE(o.metrics.gpu_util_pct.has_value());
  EXPECT_DOUBLE_EQ(*o.metrics.gpu_util_pct, 81.0);
  EXPECT_EQ(*o.metrics.gpu_mem_bytes, 1073741824u);
  EXPECT_DOUBLE_EQ(*o.metrics.gpu_power_w, 250.5);
  EXPECT_NE(o.device_properties.find("H100"), std::string::npos);
}

TEST(OriginalMetrics, BadInputNamesFileAndField) {
  const std::string dir = test::makeTempDir("orig_metrics_bad");
  const std::string wrong_type = writeFile(dir, "a.metrics.json",
      R"({"schema": "etbench.metrics/1", "cpu_util_pct": "high"})");
  try {
    readOriginalMetrics(wrong_type);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a.metrics.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu_util_pct"), std::string::npos) << e.what();
  }
  EXPECT_THROW(readOriginalMetrics(writeFile(dir, "b.json", "{not json")), InputError);
  EXPECT_THROW(readOriginalMetrics(writeFile(dir, "c.json", R"({"cpu_util_pct": 1})")), InputError);
  EXPECT_THROW(readOriginalMetrics(dir + "/missing.json"), InputError);
}

TEST(OriginalMetrics, FoundBesideTheTrace) {
  const std::string dir = test::makeTempDir("orig_metrics_beside");
  writeFile(dir, "run.metrics.json", kSidecar);
  EXPECT_EQ(metricsBesideTrace(dir + "/run.et.json.gz"), dir + "/run.metrics.json");
  EXPECT_EQ(metricsBesideTrace(dir + "/run.json"), dir + "/run.metrics.json");
  EXPECT_EQ(metricsBesideTrace(dir + "/other.et.json.gz"), "");
}

// Every single-rank fleet sample carries its original's CPU utilisation and
// peak RSS, and the sidecar is what et_replay finds beside its trace.
TEST(OriginalMetrics, EveryFleetSampleCarriesThem) {
  const fs::path root = fs::path(ETB_SOURCE_DIR) / "fleet_samples";
  int samples = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    const fs::path et = entry.path() / (name + ".et.json.gz");
    if (!entry.is_directory() || !fs::exists(et)) continue;  // ddp2: per-rank files
    ++samples;
    const std::string sidecar = metricsBesideTrace(et.string());
    ASSERT_FALSE(sidecar.empty()) << name << " has no " << name << ".metrics.json";
    const OriginalSystem o = readOriginalMetrics(sidecar);
    EXPECT_GT(o.metrics.cpu_util_pct, 0.0) << name;
    EXPECT_GT(o.metrics.peak_rss_bytes, uint64_t{50} << 20) << name << ": torch alone is bigger";
    EXPECT_EQ(o.threads, 1) << name << " was recorded with --threads 1";
  }
  EXPECT_GE(samples, 7);
}

ReplayResult withOriginal() {
  ReplayResult r = testing::sampleResult();
  OriginalSystem o;
  o.source = "fleet_samples/x/x.metrics.json";
  o.metrics.cpu_util_pct = 97.5;
  o.metrics.peak_rss_bytes = uint64_t{250} << 20;
  o.metrics.minor_faults_per_iter = 826.4;
  o.threads = 1;
  r.original_system = o;
  r.system.minor_faults_per_iter = 2907.2;
  return r;
}

TEST(OriginalMetrics, ReportsShowBothSides) {
  const ReplayResult r = withOriginal();
  std::ostringstream os;
  printReport(r, os);
  const std::string text = os.str();
  EXPECT_NE(text.find("180.0%"), std::string::npos) << text;   // replay cpu (rank 0)
  EXPECT_NE(text.find("97.5%"), std::string::npos) << text;    // original cpu
  EXPECT_NE(text.find("250 MiB"), std::string::npos) << text;  // original rss
  EXPECT_NE(text.find("300 MiB"), std::string::npos) << text;  // replay rss
  EXPECT_NE(text.find("x.metrics.json"), std::string::npos) << text;
  EXPECT_NE(text.find("#  faults/iter               2907           826"), std::string::npos) << text;
  const std::string html = reportHtml(r);
  EXPECT_NE(html.find("<td class='n'>2907</td><td class='n'>826</td>"), std::string::npos);
  EXPECT_NE(html.find("97.5 %"), std::string::npos);
  EXPECT_NE(html.find("250 MiB"), std::string::npos);
  EXPECT_NE(html.find("<th class='n'>original</th>"), std::string::npos);
  const nlohmann::json j = reportToJson(r);
  EXPECT_DOUBLE_EQ(j["original_system"]["cpu_util_pct"].get<double>(), 97.5);
  EXPECT_EQ(j["original_system"]["peak_rss_bytes"].get<uint64_t>(), uint64_t{250} << 20);
  EXPECT_EQ(j["original_system"]["threads"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(j["original_system"]["minor_faults_per_iter"].get<double>(), 826.4);
  EXPECT_DOUBLE_EQ(j["system"]["minor_faults_per_iter"].get<double>(), 2907.2);
  EXPECT_DOUBLE_EQ(j["system"]["cpu_util_pct"].get<double>(), 180);
}

// --heap match in the HTML report's system table: the share of fresh pages set.
TEST(OriginalMetrics, HtmlShowsTheHeapsFreshShare) {
  ReplayResult r = withOriginal();
  r.heap = HeapMatch{};
  r.heap->share = 0.25;
  EXPECT_NE(reportHtml(r).find("<td>heap (--heap match)</td><td class='n'>large blocks kept, 25.0% "
                               "of their pages fresh</td>"),
            std::string::npos)
      << reportHtml(r);
  r.heap->share = -1;
  r.heap->note = "no figure";
  EXPECT_NE(reportHtml(r).find("glibc&#39;s own: no figure"), std::string::npos) << reportHtml(r);
}

}  // namespace
}  // namespace etb::replay
