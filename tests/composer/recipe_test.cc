// SPDX-License-Identifier: MIT
// The recipe schema and its validator: every recipe below gets the same
// verdict from our validator and from Python's jsonschema (the reference
// implementation of the standard), so the schema file is real JSON Schema
// and the compiled-in checks follow it.
#include "composer/recipe.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "composer/json_schema_lite.h"
#include "core/base/error.h"
#include "tests/test_util.h"

namespace etb::compose {
namespace {
using nlohmann::json;

const std::vector<std::pair<std::string, bool>>& recipes() {
  static const std::vector<std::pair<std::string, bool>> kRecipes = {
      {R"({"input": "a.json", "steps": [{"repeat": 4}]})", true},
      {R"({"input": "a.json", "output": "o.%d.et", "check": false, "steps": [
          {"select": ["scope:encoder", "compute"]}, {"repeat": 2},
          {"scale_dim": {"from": 128, "to": 512}}, {"dtype": {"to": "bf16"}},
          {"world_size": 64}, {"concat": "b.json"}, {"interleave_comm": "c.json"}]})", true},
      {R"({"steps": [{"repeat": 4}]})", false},                                   // no input
      {R"({"input": "a.json", "steps": []})", false},                             // no steps
      {R"({"input": "a.json", "steps": [{"repeat": 0}]})", false},
      {R"({"input": "a.json", "steps": [{"repeat": "4"}]})", false},
      {R"({"input": "a.json", "steps": [{"repaet": 4}]})", false},
      {R"({"input": "a.json", "steps": [{"repeat": 2, "world_size": 4}]})", false},
      {R"({"input": "a.json", "steps": [{"select": ["layer:3"]}]})", false},
      {R"({"input": "a.json", "steps": [{"select": ["ids:5-9", "phase:forward"]}]})", true},
      {R"({"input": "a.json", "steps": [{"scale_dim": {"from": 128}}]})", false},
      {R"({"input": "a.json", "steps": [{"dtype": {"from": "fp32"}}]})", false},
      {R"({"input": "a.json", "steps": [{"repeat": 2}], "extra": 1})", false},
  };
  return kRecipes;
}

TEST(RecipeSchema, OurValidatorAgreesWithItsVerdicts) {
  const json schema = json::parse(recipeSchemaText());
  for (const auto& [text, valid] : recipes()) {
    const std::string err = validateJson(json::parse(text), schema);
    EXPECT_EQ(err.empty(), valid) << text << "\n" << err;
  }
}

TEST(RecipeSchema, PythonJsonschemaAgrees) {
  std::string out;
  if (test::runCommand("python3 -c 'import jsonschema'", &out) != 0) {
    GTEST_SKIP() << "python3-jsonschema not installed (scripts/setup.sh installs it)";
  }
  const std::string dir = test::makeTempDir("recipe_schema");
  const std::string schema = std::string(ETB_SOURCE_DIR) + "/schemas/compose_recipe.schema.json";
  std::string paths;
  for (size_t i = 0; i < recipes().size(); ++i) {
    const std::string path = dir + "/r" + std::to_string(i) + ".json";
    std::ofstream(path) << recipes()[i].first;
    paths += " " + path;
  }
  // One interpreter for all: prints 1 (valid) or 0 per recipe.
  ASSERT_EQ(test::runCommand(
                "python3 -c 'import json,sys,jsonschema\n"
                "s = json.load(open(sys.argv[1]))\n"
                "for p in sys.argv[2:]: print(int(jsonschema.Draft202012Validator(s).is_valid(json.load(open(p)))))' " +
                    schema + paths,
                &out),
            0)
      << out;
  std::string want;
  for (const auto& [text, valid] : recipes()) want += valid ? "1\n" : "0\n";
  EXPECT_EQ(out, want);
}

TEST(RecipeSchema, CompiledInSchemaIsTheFile) {
  std::ifstream in(std::string(ETB_SOURCE_DIR) + "/schemas/compose_recipe.schema.json");
  EXPECT_EQ(json::parse(in), json::parse(recipeSchemaText()));
}

TEST(Recipe, StepsInFileOrderPathsRelativeToTheFile) {
  const std::string dir = test::makeTempDir("recipe_read");
  std::ofstream(dir + "/r.json") << R"({"input": "in.json", "output": "out.%d.json", "steps": [
      {"world_size": 8}, {"dtype": {"to": "bf16"}}, {"concat": "more.json"}, {"scale_dim": {"from": 64, "to": 96}}]})";
  const Recipe r = readRecipe(dir + "/r.json");
  EXPECT_EQ(r.input, dir + "/in.json");
  EXPECT_EQ(r.output, dir + "/out.%d.json");
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_EQ(r.steps[0].describe(), "world-size 8");
  EXPECT_EQ(r.steps[1].describe(), "dtype float32=bfloat16");
  EXPECT_EQ(r.steps[2].path, dir + "/more.json");
  EXPECT_EQ(r.steps[3].describe(), "scale-dim 64=96");
  std::ofstream(dir + "/bad.json") << R"({"input": "in.json", "steps": [{"dtype": {"to": "fp99"}}]})";
  EXPECT_THROW(readRecipe(dir + "/bad.json"), InputError);
  std::ofstream(dir + "/broken.json") << R"({"input": )";
  try {
    readRecipe(dir + "/broken.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().file, dir + "/broken.json");
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
}

}  // namespace
}  // namespace etb::compose
