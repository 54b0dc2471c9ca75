// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "core/base/error.h"
#include "core/trace_io.h"
#include "generator/bench_runner.h"
#include "replayer/replay_flags.h"
#include "tests/test_util.h"

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

// A value each kind of flag takes (choices: each is tried below).
std::string sampleValue(const replay::FlagSpec& s) {
  const std::string type = s.type;
  if (type == "INT" || type == "UINT" || type == "FLOAT") return "2";
  if (std::string(s.name) == "--index-dist") return "zipf:1.1";
  return "some/file.json";
}

// The planted fault: an et_replay flag the generated programs cannot take.
TEST(BenchFlags, TakesEveryRunFlagOfEtReplay) {
  size_t both = 0;
  for (const replay::FlagSpec& s : replay::replayFlags()) {
    if (s.use != replay::FlagUse::kBoth) continue;
    ++both;
    std::vector<std::string> values = s.choices;
    if (values.empty()) values.push_back(*s.type == '\0' ? "" : sampleValue(s));
    for (const std::string& v : values) {
      std::vector<std::string> args = {"bench", s.name};
      if (*s.type != '\0') args.push_back(v);
      EXPECT_NO_THROW(parseBenchFlags(args)) << s.name << " " << v;
    }
  }
  EXPECT_GE(both, 20u);
}

// et_replay's --help lists exactly the table's flags (and its positional
// trace): one added to replay_main.cc alone would not reach the programs.
TEST(BenchFlags, EtReplayRegistersExactlyTheTable) {
  std::string help;
  ASSERT_EQ(test::runCommand(std::string("'") + ETB_ET_REPLAY + "' --help", &help), 0) << help;
  std::set<std::string> listed;
  static const std::regex option(R"(^  (--[a-z0-9-]+))");
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, option) && m[1] != "--help") listed.insert(m[1]);
  }
  std::set<std::string> table;
  for (const replay::FlagSpec& s : replay::replayFlags()) table.insert(s.name);
  EXPECT_EQ(listed, table);
}

TEST(BenchFlags, SetsTheReplayFidelityModes) {
  const BenchFlags f = parseBenchFlags({"bench", "--host-time", "emulate", "--host-stall-us=250",
                                        "--heap", "match", "--autograd=record", "--original-ms",
                                        "1.5,2", "--original-metrics", "m.json", "--comm", "gloo"});
  EXPECT_TRUE(f.options.emulate_host);
  EXPECT_DOUBLE_EQ(f.options.host_stall_us, 250);
  EXPECT_TRUE(f.options.match_heap);
  EXPECT_TRUE(f.options.record_autograd);
  EXPECT_EQ(f.original_ms, (std::vector<double>{1.5, 2}));
  EXPECT_EQ(f.original_metrics, "m.json");
  EXPECT_EQ(f.comm, "gloo");
  const BenchFlags off = parseBenchFlags({"bench", "--host-time=off", "--heap=glibc"});
  EXPECT_FALSE(off.options.emulate_host);
  EXPECT_FALSE(off.options.match_heap);
}

void expectRefused(const std::vector<std::string>& args, const std::string& want) {
  try {
    parseBenchFlags(args);
    ADD_FAILURE() << "accepted " << args[1];
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(args[1].substr(0, args[1].find('='))), std::string::npos)
        << e.what();
  }
}

TEST(BenchFlags, RefusesBadValuesOfTheNewFlagsNamingThem) {
  expectRefused({"bench", "--host-time", "sometimes"}, "sometimes");
  expectRefused({"bench", "--heap=tcmalloc"}, "tcmalloc");
  expectRefused({"bench", "--autograd", "on"}, "\"on\"");
  expectRefused({"bench", "--host-stall-us", "-5"}, "-5");
  expectRefused({"bench", "--original-ms", "1,x"}, "\"x\"");
  expectRefused({"bench", "--comm", "smoke"}, "smoke");
  expectRefused({"bench", "--verify=yes"}, "no value");
}

// What needs the trace file is et_replay's alone, and said so.
TEST(BenchFlags, RefusesEtReplayOnlyFlagsSayingWhy) {
  for (const replay::FlagSpec& s : replay::replayFlags()) {
    if (s.use != replay::FlagUse::kEtReplayOnly) continue;
    expectRefused({"bench", s.name, "1"}, "et_replay only");
  }
}

// A program generated without the profiler file has no times to emulate
// host time from: exit 2, naming the program and its trace. (The runtime
// a program runs, on the mlp sample read without its Kineto file.)
trace::Trace g_untimed;
trace::Trace untimedTrace(int) { return g_untimed; }

TEST(BenchFlags, HostTimeWithoutProfilerTimesExits2NamingTheTrace) {
  g_untimed = trace::readTrace(std::string(ETB_SOURCE_DIR) + "/fleet_samples/mlp/mlp.et.json.gz");
  g_untimed.path = "mlp.et.json.gz";  // as a generated program names it
  BenchProgram p;
  p.name = "mlp_bench";
  p.build = untimedTrace;
  const char* argv[] = {"bench", "--host-time", "emulate", "--iters", "1", "--warmup", "0",
                        "--threads", "1", "--quiet"};
  testing::internal::CaptureStderr();
  const int rc = runBench(p, 10, const_cast<char**>(argv));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 2) << err;
  EXPECT_NE(err.find("mlp_bench: error: mlp.et.json.gz"), std::string::npos) << err;
  EXPECT_NE(err.find("--kineto"), std::string::npos) << err;
}

}  // namespace
}  // namespace etb::gen
