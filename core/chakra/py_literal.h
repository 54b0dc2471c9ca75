// SPDX-License-Identifier: MIT
//
// Python literals as Chakra stores them: IOInfo values/shapes/types are the
// Python str() of the PyTorch ET JSON lists (single quotes, True/False/None).
// A small parser and printer so that the Chakra reader and writer agree
// exactly, including doubles at full precision and escaped strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etb::trace::pylit {

enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kList };

struct Lit {
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<Lit> items;  // kList (tuples parse as lists)
};

// Parses one literal; nullopt on any syntax error, trailing garbage, or
// nesting deeper than 64 levels (so garbage can never blow the stack).
std::optional<Lit> parse(std::string_view text);

// Appends Python-style renderings: 'quoted' strings with escapes, doubles
// with 17 significant digits (inf, -inf, nan bare), True/False/None.
void appendString(std::string& out, std::string_view s);
void appendDouble(std::string& out, double d);
void append(std::string& out, const Lit& lit);

}  // namespace etb::trace::pylit
