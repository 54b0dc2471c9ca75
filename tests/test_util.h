// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

namespace etb::test {

// ../shared/traces beside the checkout, or "" when it is absent.
std::string sharedTracesDir();

// Skips the current test with a clear message when ../shared/traces is
// absent. Use as: ETB_REQUIRE_SHARED_TRACES(dir);
#define ETB_REQUIRE_SHARED_TRACES(var)                                     \
  const std::string var = ::etb::test::sharedTracesDir();                 \
  if (var.empty()) {                                                       \
    GTEST_SKIP() << "../shared/traces not found beside the checkout; "     \
                    "public-trace tests skipped";                          \
  }

// A fresh temporary directory, removed at process exit.
std::string makeTempDir(const std::string& tag);

// Extracts a .tar/.tar.gz/.tgz archive into a fresh temp dir (cached per
// archive for the process) and returns the paths of its regular files,
// sorted.
std::vector<std::string> extractArchive(const std::string& archive);

// Every regular file under `dir` whose name ends with one of `suffixes`,
// sorted.
std::vector<std::string> listFiles(const std::string& dir,
                                   const std::vector<std::string>& suffixes);

// Runs a shell command; returns its exit status and fills *output with
// stdout+stderr.
int runCommand(const std::string& cmd, std::string* output);

}  // namespace etb::test
