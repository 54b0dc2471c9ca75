// SPDX-License-Identifier: MIT
#include "generator/suite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace etb::gen {
namespace {
namespace fs = std::filesystem;

const std::string kFleet = std::string(ETB_SOURCE_DIR) + "/fleet_samples";
const std::string kShared = ETB_SHARED_TRACES;

TEST(Suite, FileStemTiesRanksAndProfilerTraces) {
  int rank = 0;
  EXPECT_EQ(fileStem("ddp2.rank0.et.json.gz", &rank), "ddp2");
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(fileStem("ddp2.rank1.kineto.json.gz", &rank), "ddp2");
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(fileStem("all_reduce.3.et", &rank), "all_reduce");
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(fileStem("linear_et.json.gz", &rank), "linear");
  EXPECT_EQ(rank, -1);
  EXPECT_EQ(fileStem("linear_kineto.json.gz", &rank), "linear");
  EXPECT_EQ(fileStem("benchmark_simple_add_trace.json.gz", &rank), "benchmark_simple_add");
  EXPECT_EQ(fileStem("mlp.chrome_legacy.json.gz", &rank), "mlp");
}

// A fleet folder of links to real recordings.
class FleetDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("etb_fleet_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void link(const std::string& from, const std::string& sub) {
    fs::create_directories(dir_ / sub);
    fs::create_symlink(from, dir_ / sub / fs::path(from).filename());
  }
  fs::path dir_;
};

double metaMedianMs(const std::string& model) {
  std::ifstream in(kFleet + "/" + model + "/" + model + ".meta.json");
  return nlohmann::json::parse(in).at("original").at("iter_ms_median").get<double>();
}

TEST_F(FleetDir, TwoRecordingsOfOneModelGroupTogetherOthersDoNot) {
  const std::string a = kShared + "/param/resnet_et.json.gz";
  const std::string b = kShared + "/param/1.0.3-chakra.0.0.4/resnet_1gpu_et.json.gz";
  if (!fs::exists(a) || !fs::exists(b)) GTEST_SKIP() << "public traces not found: " << kShared;
  link(a, "jobs1");
  link(b, "jobs2");
  for (const char* m : {"mlp", "transformer"}) {
    link(kFleet + "/" + m + "/" + m + ".et.json.gz", m);
    link(kFleet + "/" + m + "/" + m + ".kineto.json.gz", m);
    link(kFleet + "/" + m + "/" + m + ".meta.json", m);     // sidecars, not traces:
    link(kFleet + "/" + m + "/" + m + ".metrics.json", m);  // listed as ignored
  }
  const FleetScan scan = scanFleet(dir_.string());
  ASSERT_EQ(scan.jobs.size(), 4u);
  EXPECT_EQ(scan.ignored.size(), 4u);
  std::vector<JobFacts> facts;
  for (const FleetJob& j : scan.jobs) facts.push_back(readJobFacts(j));
  std::vector<Group> groups = groupJobs(facts);
  ASSERT_EQ(groups.size(), 3u);
  // Jobs are in path order: jobs1, jobs2, mlp, transformer.
  EXPECT_EQ(groups[0].members, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(groups[1].members, (std::vector<size_t>{2}));
  EXPECT_EQ(groups[2].members, (std::vector<size_t>{3}));
  // The public ETs carry no profiler times: weights by count, 2:1:1.
  EXPECT_EQ(assignWeights(groups, facts), "count");
  EXPECT_DOUBLE_EQ(groups[0].weight, 0.5);
  EXPECT_DOUBLE_EQ(groups[1].weight, 0.25);
  EXPECT_DOUBLE_EQ(groups[2].weight, 0.25);
}

TEST_F(FleetDir, TimedFleetIsWeightedByRecordedTime) {
  std::vector<std::string> models = {"mlp", "resnet18", "transformer"};
  for (const std::string& m : models) {
    link(kFleet + "/" + m + "/" + m + ".et.json.gz", m);
    link(kFleet + "/" + m + "/" + m + ".kineto.json.gz", m);
  }
  const FleetScan scan = scanFleet(dir_.string());
  ASSERT_EQ(scan.jobs.size(), 3u);
  std::vector<JobFacts> facts;
  for (const FleetJob& j : scan.jobs) {
    EXPECT_EQ(j.kineto.size(), 1u) << j.name;
    facts.push_back(readJobFacts(j));
  }
  std::vector<Group> groups = groupJobs(facts);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(assignWeights(groups, facts), "recorded_time");
  // Independent figures: the recorder's own step times (meta.json), which
  // the profiler's ProfilerStep durations match to within noise.
  double total = 0;
  for (const std::string& m : models) total += metaMedianMs(m);
  for (size_t g = 0; g < groups.size(); ++g) {
    EXPECT_NEAR(groups[g].weight, metaMedianMs(models[g]) / total, 0.1) << models[g];
  }
}

// A fleet with CPU and GPU recordings of one model (fleet_samples/gpt and
// fleet_samples/gpu_h200/gpt, similar enough by operators to be one group):
// the GPU jobs group apart from the CPU one, and the two "gpt" jobs get
// names that tell them apart while each still finds its own meta.json.
TEST_F(FleetDir, GpuAndCpuRecordingsOfOneModelAreNeverOneGroup) {
  const std::vector<std::pair<std::string, std::string>> jobs = {
      {kFleet + "/gpt/gpt", "gpt"},
      {kFleet + "/gpu_h200/gpt/gpt", "gpu_h200/gpt"},
      {kFleet + "/gpu_h200/gpt_big/gpt_big", "gpu_h200/gpt_big"}};
  for (const auto& [base, sub] : jobs) {
    for (const char* ext : {".et.json.gz", ".kineto.json.gz", ".meta.json"}) link(base + ext, sub);
  }
  FleetScan scan = scanFleet(dir_.string());
  ASSERT_EQ(scan.jobs.size(), 3u);
  uniqueJobNames(scan.jobs);
  // Path order: gpt/, gpu_h200/gpt/, gpu_h200/gpt_big/.
  EXPECT_EQ(scan.jobs[0].name, "gpt");
  EXPECT_EQ(scan.jobs[1].name, "gpu_h200_gpt");
  EXPECT_EQ(scan.jobs[2].name, "gpt_big");
  std::vector<JobFacts> facts;
  for (size_t j = 0; j < jobs.size(); ++j) {
    facts.push_back(readJobFacts(scan.jobs[j]));
    ASSERT_TRUE(facts.back().error.empty()) << facts.back().error;
    // Each job's original is its own sample's unprofiled median.
    std::ifstream in(jobs[j].first + ".meta.json");
    EXPECT_NEAR(facts.back().original_iter_ms,
                nlohmann::json::parse(in).at("original").at("iter_ms_median").get<double>(), 0.0005)
        << scan.jobs[j].name;
  }
  EXPECT_EQ(facts[0].device, "cpu");
  EXPECT_EQ(facts[1].device, "cuda");
  EXPECT_EQ(facts[2].device, "cuda");
  // The operator signatures alone would put the CPU gpt with the GPU ones
  // (the planted fault: grouping without the device).
  ASSERT_GE(similarity(facts[0].signature, facts[1].signature), 0.8);
  const std::vector<Group> groups = groupJobs(facts);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].members, (std::vector<size_t>{0}));
  EXPECT_EQ(groups[1].members, (std::vector<size_t>{1, 2}));
}

// A fleet sample's meta.json beside its trace gives the job its unprofiled
// original (the median of its plain steps, computed here from the list);
// a meta.json that is not a fleet sample's is ignored with the profiled step
// kept, not the job dropped.
TEST_F(FleetDir, MetaJsonBesideATraceGivesTheUnprofiledOriginal) {
  for (const std::string m : {"gpt", "mlp"}) {
    link(kFleet + "/" + m + "/" + m + ".et.json.gz", m);
    link(kFleet + "/" + m + "/" + m + ".kineto.json.gz", m);
  }
  link(kFleet + "/gpt/gpt.meta.json", "gpt");
  std::ofstream(dir_ / "mlp" / "mlp.meta.json") << "{\"not\": \"a fleet meta\"}";
  const FleetScan scan = scanFleet(dir_.string());
  ASSERT_EQ(scan.jobs.size(), 2u);
  for (const FleetJob& j : scan.jobs) {
    const JobFacts f = readJobFacts(j);
    ASSERT_TRUE(f.error.empty()) << j.name << ": " << f.error;
    std::ifstream in(kFleet + "/" + j.name + "/" + j.name + ".meta.json");
    std::vector<double> steps = nlohmann::json::parse(in).at("original").at("iter_ms");
    std::sort(steps.begin(), steps.end());
    const double plain = steps.size() % 2 ? steps[steps.size() / 2]
                                          : (steps[steps.size() / 2 - 1] + steps[steps.size() / 2]) / 2;
    if (j.name == "gpt") {
      EXPECT_NEAR(f.original_iter_ms, plain, 1e-9);
    } else {
      EXPECT_GT(f.original_iter_ms, 0);  // the profiled step, not the bad meta's nothing
      EXPECT_GT(std::abs(f.original_iter_ms - plain), 1e-6);
    }
  }
}

}  // namespace
}  // namespace etb::gen
