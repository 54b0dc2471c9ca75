// SPDX-License-Identifier: MIT
// schemaArgNames (core/pytorch_et/op_schema.h) against libtorch's own schema
// parser, over every distinct schema the fleet samples recorded (and the
// public traces beside the checkout, when present): the replayer matches
// c10d arguments and the predictor finds memory_format by these positions.
#include "core/pytorch_et/op_schema.h"

#include <torch/csrc/jit/frontend/function_schema_parser.h>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/trace_io.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

// Every distinct op_schema of the execution traces (not profiler files)
// under `dir`; `files`: how many traces were read.
void collectSchemas(const std::string& dir, std::set<std::string>* schemas, int* files) {
  for (const std::string& path :
       test::listFiles(dir, {".et.json.gz", ".et.json", "_et.json.gz", "_et.json"})) {
    Trace t;
    try {
      t = readTrace(path);
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
  collectSchemas(std::string(ETB_SOURCE_DIR) + "/fleet_samples", &schemas, &files);
  collectSchemas(test::sharedTracesDir(), &schemas, &files);
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
