// SPDX-License-Identifier: MIT
//
// A composition as data: the input, the ordered steps, the output. Built
// from the command line (fixed order) or from a JSON recipe file validated
// against schemas/compose_recipe.schema.json (steps in file order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::compose {

enum class StepKind : uint8_t { kSelect, kRepeat, kScaleDim, kDtype, kWorldSize, kConcat, kInterleave };

struct Step {
  StepKind kind = StepKind::kSelect;
  std::vector<std::string> selectors;  // kSelect
  int64_t count = 0;                   // kRepeat, kWorldSize
  int64_t from = 0, to = 0;            // kScaleDim
  trace::DType dtype_from = trace::DType::kFloat, dtype_to = trace::DType::kUnknown;
  std::string path;                    // kConcat, kInterleave (a trace or per-rank pattern)
  std::string describe() const;        // "repeat 4", "scale-dim 128=512", ...
};

struct Recipe {
  std::string input;   // a trace, a %d pattern or a folder
  std::vector<Step> steps;
  std::string output;  // by extension: .json(.gz) ET, .et(.gz) Chakra; %d per rank
  bool check = true;
  bool dry_run = false;
};

// Parses "128=512" (--scale-dim) into *from, *to; InputError otherwise.
void parseDimSubstitution(const std::string& text, int64_t* from, int64_t* to);

// Parses "bf16" (float32 -> bf16) or "fp32=bf16" (--dtype).
void parseDtypeChange(const std::string& text, trace::DType* from, trace::DType* to);

// Reads and validates a recipe file. Paths in it are relative to the
// file's folder. Throws InputError naming the file and the JSON pointer of
// the first violation ("r.json: /steps/2/repeat: must be an integer >= 1").
Recipe readRecipe(const std::string& path);

// The recipe schema as compiled in (for tests and --help).
const char* recipeSchemaText();

}  // namespace etb::compose
