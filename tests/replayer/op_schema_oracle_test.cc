// SPDX-License-Identifier: MIT
// schemaArgNames (core/pytorch_et/op_schema.h) against libtorch's own schema
// parser, over every distinct schema the fleet samples recorded (and the
// public traces beside the checkout, when present): the replayer matches
// c10d arguments and the predictor finds memory_format by these positions.
#include "core/pytorch_et/op_schema.h"

#include <torch/csrc/jit/frontend/function_schema_parser.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/trace_io.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

namespace fs = std::filesystem;

void collectSchemas(const fs::path& root, std::set<std::string>* schemas, int* files) {
  if (!fs::is_directory(root)) return;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.find("kineto") != std::string::npos) continue;
    if (name.find(".et.json") == std::string::npos && name.find("_et.json") == std::string::npos) continue;
    Trace t;
    try {
      t = readTrace(e.path().string());
    } catch (const std::exception&) {
      continue;  // the readers' own tests cover what they refuse
    }
    ++*files;
    for (const Node& n : t.nodes) {
      const std::string_view s = t.str(n.op_schema);
      if (!s.empty()) schemas->insert(std::string(s));
    }
  }
}

TEST(OpSchemaOracle, EveryRecordedSchemaNamesItsArgumentsAsLibtorchParsesThem) {
  std::set<std::string> schemas;
  int files = 0;
  collectSchemas(fs::path(ETB_SOURCE_DIR) / "fleet_samples", &schemas, &files);
  collectSchemas(fs::path(ETB_SHARED_TRACES), &schemas, &files);
  ASSERT_GT(files, 10) << "fleet_samples/ holds the recorded traces";
  int compared = 0, unparsed = 0;
  for (const std::string& s : schemas) {
    std::vector<std::string> expected;
    try {
      const c10::FunctionSchema parsed = torch::jit::parseSchema(s);
      for (const c10::Argument& a : parsed.arguments()) expected.push_back(a.name());
    } catch (const std::exception&) {
      ++unparsed;  // a type this libtorch does not know (a newer c10d class, a Triton kernel)
      continue;
    }
    const std::vector<std::string_view> got = schemaArgNames(s);
    EXPECT_EQ(std::vector<std::string>(got.begin(), got.end()), expected) << s;
    ++compared;
  }
  std::printf("%d schemas from %d traces: %d compared, %d not parsed by libtorch\n",
              static_cast<int>(schemas.size()), files, compared, unparsed);
  EXPECT_GT(compared, 100);
  EXPECT_LT(unparsed * 4, compared) << "libtorch parses most recorded schemas";
}

}  // namespace
}  // namespace etb::trace
