// SPDX-License-Identifier: MIT
//
// One source of truth: the runtime et_generate copies into programs must be
// the replayer's own sources, byte for byte, and all of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "generator/runtime_files.h"

namespace etb::gen {
namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(EmbeddedRuntime, ByteIdenticalToTheTree) {
  ASSERT_FALSE(runtimeFiles().empty());
  for (const RuntimeFile& f : runtimeFiles()) {
    const fs::path p = fs::path(ETB_SOURCE_DIR) / f.path;
    ASSERT_TRUE(fs::exists(p)) << f.path;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data), f.size), slurp(p)) << f.path;
  }
}

TEST(EmbeddedRuntime, HoldsEveryReplayerSource) {
  std::set<std::string> have;
  for (const RuntimeFile& f : runtimeFiles()) have.insert(f.path);
  // The folders listed independently of the CMake targets the embedding reads.
  for (const char* dir : {"replayer", "replayer/comm"}) {
    for (const auto& e : fs::directory_iterator(fs::path(ETB_SOURCE_DIR) / dir)) {
      const std::string name = e.path().filename().string();
      const std::string ext = e.path().extension().string();
      // et_replay's main and its trace writer (--write-timed-trace needs the
      // format writers, which generated programs do not carry) stay behind.
      if ((ext != ".cc" && ext != ".h") || name == "replay_main.cc" ||
          name.rfind("timed_trace.", 0) == 0) {
        continue;
      }
      EXPECT_TRUE(have.count(std::string(dir) + "/" + name)) << dir << "/" << name;
    }
  }
  for (const char* f : {"core/model/trace.cc", "core/model/trace.h", "core/base/log.cc",
                        "core/base/error.h", "etb_config.h.in", "generator/bench_runner.cc"}) {
    EXPECT_TRUE(have.count(f)) << f;
  }
  // The readers stay behind: the trace travels as code.
  for (const std::string& p : have) {
    EXPECT_EQ(p.find("pytorch_et/"), std::string::npos) << p;
    EXPECT_EQ(p.find("chakra/"), std::string::npos) << p;
  }
}

}  // namespace
}  // namespace etb::gen
