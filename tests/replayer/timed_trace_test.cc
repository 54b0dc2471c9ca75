// SPDX-License-Identifier: MIT
//
// et_replay --write-timed-trace: the trace comes back with each replayed
// op's median time (the figures of the replay's own JSON report), in a .et
// the simulator's rules accept, and goes through et_convert unchanged: the
// pipeline replay -> timed trace -> et_convert -> simulator.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/base/file_io.h"
#include "tests/core/chakra_conformance.h"
#include "tests/test_util.h"

namespace etb::test {
namespace {

const std::string kReplay = ETB_BINARY_DIR "/replayer/et_replay";
const std::string kConvert = ETB_BINARY_DIR "/core/et_convert";

uint64_t sumDurations(const Conformance& c) {
  uint64_t sum = 0;
  for (const SimNode& n : c.nodes) sum += n.duration_micros;
  return sum;
}

TEST(TimedTrace, CarriesTheReplayReportsMedians) {
  const std::string tmp = makeTempDir("timed");
  const std::string timed = tmp + "/mlp.timed.et";
  const std::string report = tmp + "/report.json";
  std::string out;
  ASSERT_EQ(runCommand(kReplay + " " ETB_SOURCE_DIR "/fleet_samples/mlp/mlp.et.json.gz --device cpu "
                       "--warmup 1 --iters 3 --quiet --report-json " + report +
                       " --write-timed-trace " + timed, &out), 0) << out;
  const nlohmann::json r = nlohmann::json::parse(readFileMaybeGzip(report));
  std::map<uint64_t, double> want;
  double total = 0;
  for (const auto& op : r.at("ops")) {
    if (!op.at("replayed").get<bool>() && !op.at("is_comm").get<bool>()) continue;
    want[op.at("node_id").get<uint64_t>()] = op.at("replay_us").get<double>();
    total += op.at("replay_us").get<double>();
  }
  ASSERT_GT(want.size(), 10u);
  const Conformance c = checkChakraFile(timed);
  EXPECT_TRUE(c.violations.empty()) << c.summary();
  for (const SimNode& n : c.nodes) {
    const auto it = want.find(n.id);
    if (it == want.end()) {
      EXPECT_EQ(n.duration_micros, 0u) << "node " << n.id << " was not replayed";
    } else {
      // Whole microseconds, the rounding carried along the thread.
      EXPECT_NEAR(static_cast<double>(n.duration_micros), it->second, 1.0) << "node " << n.id;
    }
  }
  EXPECT_NEAR(static_cast<double>(sumDurations(c)), total, 0.5 + 1e-6);
  // Through et_convert to the simulator's file: same times.
  const std::string again = tmp + "/mlp.sim.et";
  ASSERT_EQ(runCommand(kConvert + " " + timed + " " + again, &out), 0) << out;
  const Conformance d = checkChakraFile(again);
  EXPECT_TRUE(d.violations.empty()) << d.summary();
  EXPECT_EQ(sumDurations(d), sumDurations(c));
}

}  // namespace
}  // namespace etb::test
