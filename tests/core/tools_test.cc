// SPDX-License-Identifier: MIT
//
// et_inspect and et_convert run as the user runs them: separate processes,
// output captured through a pipe (so no progress bar may appear).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/model/trace_compare.h"
#include "core/trace_io.h"
#include "tests/test_util.h"

namespace etb::test {
namespace {

const std::string kInspect = ETB_BINARY_DIR "/core/et_inspect";
const std::string kConvert = ETB_BINARY_DIR "/core/et_convert";

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string resnetEt(const std::string& dir) {
  return dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz";
}

TEST(EtInspect, JsonNamesSchemaAndCountsNodes) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::string out;
  ASSERT_EQ(runCommand(kInspect + " --json " + quote(resnetEt(dir)), &out), 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j.at("schema"), "1.1.0-chakra.0.0.4");
  EXPECT_EQ(j.at("format"), "pytorch-et-json");
  EXPECT_EQ(j.at("nodes"), 14392);  // PROVENANCE.md's count for this file
  EXPECT_FALSE(j.at("top_operators_by_count").empty());
  EXPECT_FALSE(j.at("collectives").empty());
}

TEST(EtInspect, ReadsChakraWithCollectiveBytes) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  // ASTRA-sim's 4-NPU 1 MB all_reduce: one COMM_COLL node of comm_size 1 MiB.
  const std::string et = dir + "/astra-sim/microbenchmarks/all_reduce/4npus_1MB/all_reduce.1.et";
  std::string out;
  ASSERT_EQ(runCommand(kInspect + " --json " + quote(et), &out), 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j.at("format"), "chakra-protobuf");
  EXPECT_EQ(j.at("nodes"), 1);
  ASSERT_EQ(j.at("collectives").size(), 1u);
  EXPECT_EQ(j.at("collectives").at(0).at("type"), "all_reduce");
  EXPECT_EQ(j.at("collectives").at(0).at("bytes"), 1048576);
}

TEST(EtInspect, TextReportHasEverySection) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::string out;
  ASSERT_EQ(runCommand(kInspect + " --top 3 " + quote(resnetEt(dir)), &out), 0) << out;
  for (const char* want : {"schema:     1.1.0-chakra.0.0.4", "# top operators by count",
                           "# collectives", "# process groups", "# iterations",
                           "# repairs:"}) {
    EXPECT_NE(out.find(want), std::string::npos) << want << "\nin:\n" << out;
  }
  EXPECT_EQ(out.find('\r'), std::string::npos) << "progress drawn on a pipe";
}

// A pair recorded together (the mid-2023 PARAM pairs' ids drift, see
// kineto_linker_test.cc).
TEST(EtInspect, KinetoLinkTimesOperators) {
  const std::string base = std::string(ETB_SOURCE_DIR) + "/fleet_samples/mlp/mlp";
  std::string out;
  ASSERT_EQ(runCommand(kInspect + " --json " + quote(base + ".et.json.gz") + " --kineto " +
                           quote(base + ".kineto.json.gz"),
                       &out),
            0)
      << out;
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_GE(j.at("linked_percent").get<double>(), 95.0);
  EXPECT_FALSE(j.at("top_operators_by_time").empty());
  EXPECT_GT(j.at("kineto").at("linked_operators").get<int>(), 0);
}

TEST(EtInspect, BadInputExitsTwoNamingTheFile) {
  const std::string dir = makeTempDir("inspect_bad");
  const std::string bad = dir + "/broken.json";
  std::ofstream(bad) << "{\"schema\": \"1.1.1\", \"nodes\": \"oops\"}";
  std::string out;
  EXPECT_EQ(runCommand(kInspect + " " + quote(bad), &out), 2) << out;
  EXPECT_NE(out.find("et_inspect: error:"), std::string::npos) << out;
  EXPECT_NE(out.find("broken.json"), std::string::npos) << out;
  EXPECT_EQ(runCommand(kInspect + " " + quote(dir + "/missing.json"), &out), 2) << out;
  EXPECT_NE(out.find("missing.json"), std::string::npos) << out;
  EXPECT_EQ(runCommand(kInspect + " --no-such-flag x", &out), 2) << out;
}

TEST(EtInspect, TruncatedFileIsRepairedOrRefusedWithStrict) {
  const std::string dir = makeTempDir("inspect_trunc");
  const std::string cut = dir + "/cut.json";
  std::ofstream(cut) << "{\"schema\": \"1.1.1\", \"nodes\": [{\"id\": 1, \"na";
  std::string out;
  ASSERT_EQ(runCommand("ETB_LOG_LEVEL=error " + kInspect + " --json " + quote(cut), &out), 0) << out;
  EXPECT_GE(nlohmann::json::parse(out).at("repairs").at("count").get<int>(), 1) << out;
  EXPECT_EQ(runCommand(kInspect + " --strict " + quote(cut), &out), 2) << out;
  EXPECT_NE(out.find("cut.json"), std::string::npos) << out;
}

TEST(EtConvert, JsonToChakraToJsonKeepsTheGraph) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::string tmp = makeTempDir("convert_rt");
  std::string out;
  ASSERT_EQ(runCommand(kConvert + " " + quote(resnetEt(dir)) + " " + quote(tmp + "/r.et"), &out),
            0)
      << out;
  EXPECT_NE(out.find("wrote " + tmp + "/r.et"), std::string::npos) << out;
  ASSERT_EQ(runCommand(kConvert + " " + quote(tmp + "/r.et") + " " + quote(tmp + "/r.json.gz"),
                       &out),
            0)
      << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << "progress drawn on a pipe";
  const trace::Trace original = trace::readTrace(resnetEt(dir));
  const trace::Trace chakra = trace::readTrace(tmp + "/r.et");
  EXPECT_EQ(chakra.format, trace::SourceFormat::kChakraProtobuf);
  const trace::Trace back = trace::readTrace(tmp + "/r.json.gz");
  EXPECT_EQ(back.format, trace::SourceFormat::kPyTorchEtJson);
  EXPECT_EQ(trace::diffTraces(original, back), "");
}

TEST(EtConvert, MultiRankFolderWritesOneFilePerRank) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const auto files = extractArchive(dir + "/param/dlrm_pytorch_et.tar.gz");
  ASSERT_FALSE(files.empty());
  const std::string in = std::filesystem::path(files[0]).parent_path().string();
  const std::string tmp = makeTempDir("convert_multi");
  std::string out;
  ASSERT_EQ(runCommand(kConvert + " " + quote(in) + " " + quote(tmp + "/dlrm"), &out), 0)
      << out;
  const size_t ranks = trace::expandRankPaths(in).size();
  EXPECT_EQ(ranks, 8u);
  for (size_t r = 0; r < ranks; ++r) {
    const std::string p = tmp + "/dlrm." + std::to_string(r) + ".et";
    ASSERT_TRUE(std::filesystem::exists(p)) << p << "\n" << out;
    EXPECT_EQ(trace::readTrace(p).nodes.size(),
              trace::readTrace(trace::expandRankPaths(in)[r]).nodes.size());
  }
  // A %d pattern names the outputs explicitly.
  ASSERT_EQ(runCommand(kConvert + " " + quote(in) + " " + quote(tmp + "/w%d.json"), &out), 0)
      << out;
  EXPECT_TRUE(std::filesystem::exists(tmp + "/w7.json")) << out;
}

TEST(EtConvert, BadArgumentsExitTwo) {
  const std::string tmp = makeTempDir("convert_bad");
  std::string out;
  EXPECT_EQ(runCommand(kConvert + " " + quote(tmp + "/nope.json") + " " + quote(tmp + "/x.et"),
                       &out),
            2)
      << out;
  EXPECT_NE(out.find("nope.json"), std::string::npos) << out;
  EXPECT_EQ(runCommand(kConvert + " a.json " + quote(tmp + "/x.txt"), &out), 2) << out;
  EXPECT_NE(out.find("x.txt"), std::string::npos) << out;
  EXPECT_NE(out.find("et_convert: error:"), std::string::npos) << out;
}

}  // namespace
}  // namespace etb::test
