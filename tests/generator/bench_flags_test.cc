// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "generator/bench_runner.h"

namespace etb::gen {
namespace {

TEST(BenchFlags, ParsesTheEverydayFlags) {
  const BenchFlags f = parseBenchFlags({"bench", "--warmup", "3", "--iters=7", "--device", "cpu",
                                        "--threads", "2", "--seed", "99", "--index-dist",
                                        "zipf:1.1", "--report-json", "r.json", "--report-html=r.html",
                                        "--chrome-trace", "t.json", "--verify", "--quiet"});
  EXPECT_EQ(f.options.warmup, 3);
  EXPECT_EQ(f.options.iters, 7);
  EXPECT_EQ(f.options.device, "cpu");
  EXPECT_EQ(f.options.threads, 2);
  EXPECT_EQ(f.options.seed, 99u);
  EXPECT_EQ(f.options.index_dist, "zipf:1.1");
  EXPECT_EQ(f.report_json, "r.json");
  EXPECT_EQ(f.report_html, "r.html");
  EXPECT_EQ(f.chrome_trace, "t.json");
  EXPECT_TRUE(f.options.verify_outputs);
  EXPECT_TRUE(f.quiet);
}

// As et_replay's: a program replaying torchvision:: ops takes its library.
TEST(BenchFlags, LoadLibraryIsRepeatable) {
  const BenchFlags f = parseBenchFlags({"bench", "--load-library", "a.so", "--load-library=b.so"});
  EXPECT_EQ(f.libraries, (std::vector<std::string>{"a.so", "b.so"}));
}

TEST(BenchFlags, DefaultsMatchEtReplay) {
  const BenchFlags f = parseBenchFlags({"bench"});
  const replay::ReplayOptions et_replay_defaults;
  EXPECT_EQ(f.options.warmup, et_replay_defaults.warmup);
  EXPECT_EQ(f.options.iters, et_replay_defaults.iters);
  EXPECT_EQ(f.options.seed, et_replay_defaults.seed);
  EXPECT_EQ(f.options.index_dist, et_replay_defaults.index_dist);
}

TEST(BenchFlags, RejectsBadFlagsNamingThem) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"bench", "--bogus"}, {"bench", "--iters"},
        {"bench", "--iters", "x"}, {"bench", "--seed=1.5"}}) {
    try {
      parseBenchFlags(bad);
      ADD_FAILURE() << "accepted " << bad.back();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace etb::gen
