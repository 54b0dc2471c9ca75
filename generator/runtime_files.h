// SPDX-License-Identifier: MIT
//
// The replay runtime's sources as they were when et_generate was built
// (generator/embed.cmake writes the table from the replayer's own targets).
#pragma once

#include <cstddef>
#include <vector>

namespace etb::gen {

struct RuntimeFile {
  const char* path;  // relative to the repository root, e.g. "replayer/executor.cc"
  const unsigned char* data;
  size_t size;
};

const std::vector<RuntimeFile>& runtimeFiles();

}  // namespace etb::gen
