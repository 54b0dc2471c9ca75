// SPDX-License-Identifier: MIT
#include "composer/recipe.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "composer/json_schema_lite.h"
#include "composer/recipe_schema.h"
#include "composer/scale.h"
#include "core/base/error.h"

namespace etb::compose {
namespace {
using nlohmann::json;

std::string relativeTo(const std::string& dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || dir.empty()) return path;
  return (std::filesystem::path(dir) / path).string();
}

Step stepFrom(const json& j, const std::string& dir) {
  Step s;
  const auto first = j.begin();  // named: a reference through a temporary iterator reads as dangling
  const std::string key = first.key();
  const json& v = first.value();
  if (key == "select") {
    s.kind = StepKind::kSelect;
    s.selectors = v.get<std::vector<std::string>>();
  } else if (key == "repeat" || key == "world_size") {
    s.kind = key == "repeat" ? StepKind::kRepeat : StepKind::kWorldSize;
    s.count = v.get<int64_t>();
  } else if (key == "scale_dim") {
    s.kind = StepKind::kScaleDim;
    s.from = v["from"].get<int64_t>();
    s.to = v["to"].get<int64_t>();
  } else if (key == "dtype") {
    s.kind = StepKind::kDtype;
    s.dtype_from = parseDtypeFlag(v.value("from", "fp32"));
    s.dtype_to = parseDtypeFlag(v["to"].get<std::string>());
  } else {
    s.kind = key == "concat" ? StepKind::kConcat : StepKind::kInterleave;
    s.path = relativeTo(dir, v.get<std::string>());
  }
  return s;
}
}  // namespace

const char* recipeSchemaText() { return detail::kRecipeSchema; }

std::string Step::describe() const {
  switch (kind) {
    case StepKind::kSelect: {
      std::string s = "select";
      for (const std::string& x : selectors) s += " " + x;
      return s;
    }
    case StepKind::kRepeat: return "repeat " + std::to_string(count);
    case StepKind::kScaleDim: return "scale-dim " + std::to_string(from) + "=" + std::to_string(to);
    case StepKind::kDtype:
      return "dtype " + std::string(trace::dtypeName(dtype_from)) + "=" + std::string(trace::dtypeName(dtype_to));
    case StepKind::kWorldSize: return "world-size " + std::to_string(count);
    case StepKind::kConcat: return "concat " + path;
    case StepKind::kInterleave: return "interleave-comm " + path;
  }
  return "";
}

void parseDimSubstitution(const std::string& text, int64_t* from, int64_t* to) {
  const size_t eq = text.find('=');
  try {
    size_t a = 0, b = 0;
    if (eq == std::string::npos) throw std::invalid_argument("no =");
    *from = std::stoll(text.substr(0, eq), &a);
    *to = std::stoll(text.substr(eq + 1), &b);
    if (a != eq || b != text.size() - eq - 1) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    ETB_INPUT_ERROR(SourceLoc{"--scale-dim"}, "\"", text, "\" is not OLD=NEW (for example 128=512)");
  }
}

void parseDtypeChange(const std::string& text, trace::DType* from, trace::DType* to) {
  const size_t eq = text.find('=');
  *from = eq == std::string::npos ? trace::DType::kFloat : parseDtypeFlag(text.substr(0, eq));
  *to = parseDtypeFlag(eq == std::string::npos ? text : text.substr(eq + 1));
}

Recipe readRecipe(const std::string& path) {
  std::ifstream in(path);
  if (!in) ETB_INPUT_ERROR(SourceLoc{path}, "cannot open the recipe");
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    ETB_INPUT_ERROR(SourceLoc{path}, "not valid JSON: ", e.what());
  }
  const std::string err = validateJson(j, json::parse(recipeSchemaText()));
  if (!err.empty()) {
    ETB_INPUT_ERROR(SourceLoc{path}, err, " (schema: schemas/compose_recipe.schema.json)");
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  Recipe r;
  r.input = relativeTo(dir, j["input"].get<std::string>());
  r.output = relativeTo(dir, j.value("output", ""));
  r.check = j.value("check", true);
  for (const json& s : j["steps"]) r.steps.push_back(stepFrom(s, dir));
  return r;
}

}  // namespace etb::compose
