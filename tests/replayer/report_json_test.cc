// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <fstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "replayer/report_json.h"
#include "tests/replayer/report_fixture.h"
#include "tests/test_util.h"

namespace etb::replay {
namespace {
using nlohmann::json;

json loadSchema() {
  return json::parse(
      readFileMaybeGzip(std::string(ETB_SOURCE_DIR) + "/schemas/report.schema.json"));
}

bool hasType(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "null") return v.is_null();
  return false;
}

// The subset of JSON Schema the report schema uses: type, required,
// properties, additionalProperties, items, minimum. Stricter than the spec in
// one way: a key the schema does not declare is an error unless
// additionalProperties gives a schema, so every emitted field is documented.
void validate(const json& v, const json& s, const std::string& path,
              std::vector<std::string>* errors) {
  if (s.contains("type") && !hasType(v, s["type"].get<std::string>())) {
    errors->push_back(path + ": expected " + s["type"].get<std::string>());
    return;
  }
  if (s.contains("minimum") && v.is_number() &&
      v.get<double>() < s["minimum"].get<double>()) {
    errors->push_back(path + ": below minimum");
  }
  if (v.is_object()) {
    for (const auto& key : s.value("required", json::array())) {
      if (!v.contains(key.get<std::string>())) {
        errors->push_back(path + ": missing " + key.get<std::string>());
      }
    }
    const json props = s.value("properties", json::object());
    for (const auto& [key, value] : v.items()) {
      if (props.contains(key)) {
        validate(value, props[key], path + "." + key, errors);
      } else if (s.contains("additionalProperties") &&
                 s["additionalProperties"].is_object()) {
        validate(value, s["additionalProperties"], path + "." + key, errors);
      } else {
        errors->push_back(path + ": undocumented field " + key);
      }
    }
  }
  if (v.is_array() && s.contains("items")) {
    for (size_t i = 0; i < v.size(); ++i) {
      validate(v[i], s["items"], path + "[" + std::to_string(i) + "]", errors);
    }
  }
}

std::vector<std::string> validateReport(const json& report) {
  std::vector<std::string> errors;
  validate(report, loadSchema(), "$", &errors);
  return errors;
}

// Every schema node that describes a value carries a description.
void expectDescribed(const json& s, const std::string& path) {
  if (!s.is_object()) return;
  if (s.contains("type")) {
    EXPECT_TRUE(s.contains("description")) << path << " has no description";
  }
  for (const char* key : {"properties"}) {
    if (!s.contains(key)) continue;
    for (const auto& [name, sub] : s[key].items()) {
      expectDescribed(sub, path + "." + name);
    }
  }
  if (s.contains("items")) expectDescribed(s["items"], path + "[]");
  if (s.contains("additionalProperties")) {
    expectDescribed(s["additionalProperties"], path + ".*");
  }
}

TEST(ReportJson, HasRequiredKeys) {
  const json j = reportToJson(testing::sampleResult());
  EXPECT_DOUBLE_EQ(j["replay"]["iter_ms"]["median"].get<double>(), 10.9);
  EXPECT_EQ(j["coverage"]["operators"], 4);
  EXPECT_EQ(j["coverage"]["replayed"], 3);
  EXPECT_EQ(j["coverage"]["skipped_by_reason"]["no kernel for CPU"], 1);
  EXPECT_DOUBLE_EQ(j["original"]["iter_ms"]["median"].get<double>(), 10.0);
  EXPECT_NEAR(j["original"]["ratio"].get<double>(), 1.09, 1e-12);
  EXPECT_EQ(j["run"]["argv"].size(), 4u);
  EXPECT_EQ(j["run"]["versions"]["torch"], "1.13.1");
  EXPECT_EQ(j["run"]["threads"], 2);
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["collectives"][0]["bytes"], 4 << 20);
  EXPECT_FALSE(j["ops"][1].contains("original_us")) << "unknown is omitted";
  EXPECT_FALSE(j["system"].contains("gpu_util_pct")) << "no GPU given";
}

TEST(ReportJson, OriginalOmittedWhenUnknown) {
  ReplayResult r = testing::sampleResult();
  r.original_iter_ms.reset();
  r.original_source.clear();
  const json j = reportToJson(r);
  EXPECT_FALSE(j.contains("original"));
  EXPECT_TRUE(validateReport(j).empty());
}

TEST(ReportJson, ValidatesAgainstSchema) {
  ReplayResult r = testing::sampleResult();
  r.system.gpu_util_pct = 87.5;
  r.system.gpu_mem_bytes = uint64_t{40} << 30;
  r.system.gpu_power_w = 412.0;
  const std::vector<std::string> errors = validateReport(reportToJson(r));
  for (const std::string& e : errors) ADD_FAILURE() << e;
}

TEST(ReportJson, EmptyResultValidates) {
  const std::vector<std::string> errors = validateReport(reportToJson(ReplayResult{}));
  for (const std::string& e : errors) ADD_FAILURE() << e;
}

TEST(ReportJson, ValidatorCatchesBrokenReports) {
  json j = reportToJson(testing::sampleResult());
  j["coverage"].erase("replayed");
  j["replay"]["iter_ms"]["median"] = "fast";
  j["run"]["mystery"] = 1;
  EXPECT_EQ(validateReport(j).size(), 3u);
}

// Host-time emulation and the original's system figures are documented
// fields too (the validator refuses undocumented ones).
TEST(ReportJson, HostTimeAndOriginalSystemValidate) {
  ReplayResult r = testing::sampleResult();
  HostTime h;
  h.with_host_iter_ms = summarize({13.0, 13.5});
  h.emulated_ms = 2.0;
  h.original_host_ms = 2.5;
  h.replay_between_ms = 0.5;
  h.profiler_label_us = 1.5;
  h.label_boundaries = 200;
  h.recorded_gap_ms = 4.0;
  h.profiler_event_us = 3.2;
  h.profiler_gap_us = 1.1;
  h.gaps = 40;
  h.boundaries = 300;
  r.host_time = h;
  OriginalSystem o;
  o.source = "x.metrics.json";
  o.metrics.cpu_util_pct = 99;
  o.metrics.peak_rss_bytes = 1 << 20;
  o.threads = 1;
  o.device_properties = "[{\"id\": 0}]";
  r.original_system = o;
  HeapMatch heap;
  heap.target_faults = 35;
  heap.start_faults = 2300;
  heap.fixed_faults = 0;
  heap.offered_pages = 8000;
  heap.share = 0.005;
  heap.faults = 40;
  heap.steps = {{0, 0}, {0.004375, 36}, {0.005, 40}};
  r.heap = heap;
  const json j = reportToJson(r);
  EXPECT_TRUE(validateReport(j).empty()) << validateReport(j)[0];
  EXPECT_DOUBLE_EQ(j["heap"]["fresh_share"].get<double>(), 0.005);
  EXPECT_DOUBLE_EQ(j["heap"]["offered_pages_per_iter"].get<double>(), 8000);
  EXPECT_EQ(j["heap"]["steps"].size(), 3u);
  // the original's host share (median 10.0 ms), not the emulated remainder,
  // and the with-host ratio
  EXPECT_DOUBLE_EQ(j["host_time"]["share_pct"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(j["host_time"]["ratio"].get<double>(), 1.325);
  EXPECT_EQ(j["original_system"]["device_properties_json"], "[{\"id\": 0}]");
}

TEST(ReportJson, DeviceTimesValidate) {
  ReplayResult r = testing::withDeviceTimes();
  r.kinds[0].device_us = -1;  // unknown: omitted
  const json j = reportToJson(r);
  EXPECT_TRUE(validateReport(j).empty()) << validateReport(j)[0];
  EXPECT_DOUBLE_EQ(j["ops"][0]["device_us"].get<double>(), 2100);
  EXPECT_DOUBLE_EQ(j["ops"][0]["original_device_us"].get<double>(), 1900);
  EXPECT_FALSE(j["ops"][1].contains("device_us")) << "unknown is omitted";
  EXPECT_FALSE(j["kinds"][0].contains("device_us"));
  EXPECT_DOUBLE_EQ(j["kinds"][0]["original_device_us"].get<double>(), 1900);
  EXPECT_DOUBLE_EQ(j["device_time"]["original_ms"].get<double>(), 7.25);
  EXPECT_EQ(j["device_time"]["timed_iter_ms"]["samples"].size(), 3u);
  EXPECT_FALSE(reportToJson(testing::sampleResult()).contains("device_time"));
}

TEST(ReportJson, SchemaDocumentsEveryField) {
  const json s = loadSchema();
  EXPECT_EQ(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
  expectDescribed(s, "$");
}

// The real validator too, where Debian's python has it.
TEST(ReportJson, JsonschemaAcceptsReport) {
  std::string out;
  if (test::runCommand("/usr/bin/python3 -c 'import jsonschema'", &out) != 0) {
    GTEST_SKIP() << "python3-jsonschema not installed";
  }
  const std::string dir = test::makeTempDir("report_json");
  writeReportJson(testing::sampleResult(), dir + "/report.json");
  const std::string cmd =
      "/usr/bin/python3 -c 'import json,sys,jsonschema; "
      "s=json.load(open(sys.argv[1])); "
      "jsonschema.Draft202012Validator.check_schema(s); "
      "jsonschema.validate(json.load(open(sys.argv[2])), s, "
      "cls=jsonschema.Draft202012Validator)' " +
      std::string(ETB_SOURCE_DIR) + "/schemas/report.schema.json " + dir +
      "/report.json";
  EXPECT_EQ(test::runCommand(cmd, &out), 0) << out;
}

TEST(RankResultJson, RoundTrips) {
  RankResult in = testing::sampleResult().ranks[1];
  in.system.gpu_power_w = 300.5;
  in.operators = 7, in.replayed = 5, in.comms = 3, in.comms_replayed = 2;
  const RankResult out = rankResultFromJson(rankResultToJson(in));
  EXPECT_EQ(out.operators, 7u);
  EXPECT_EQ(out.replayed, 5u);
  EXPECT_EQ(out.comms, 3u);
  EXPECT_EQ(out.comms_replayed, 2u);
  EXPECT_EQ(out.rank, 1);
  EXPECT_EQ(out.host, "node1");
  EXPECT_EQ(out.iter_ms.samples, in.iter_ms.samples);
  EXPECT_DOUBLE_EQ(out.iter_ms.median, in.iter_ms.median);
  EXPECT_DOUBLE_EQ(out.exposed_comm_ms, 2.5);
  EXPECT_EQ(out.comm_bytes, in.comm_bytes);
  EXPECT_DOUBLE_EQ(out.system.cpu_util_pct, 181);
  EXPECT_EQ(out.system.peak_rss_bytes, in.system.peak_rss_bytes);
  EXPECT_EQ(out.system.gpu_power_w, 300.5);
  EXPECT_FALSE(out.system.gpu_util_pct.has_value());
}

TEST(RankResultJson, MalformedIsRuntimeError) {
  EXPECT_THROW(rankResultFromJson("{\"rank\": 1}"), RuntimeError);
  EXPECT_THROW(rankResultFromJson("not json"), RuntimeError);
}

}  // namespace
}  // namespace etb::replay
