// SPDX-License-Identifier: MIT
#include "core/pytorch_et/op_schema.h"

namespace etb::trace {

std::vector<std::string_view> schemaArgNames(std::string_view schema) {
  std::vector<std::string_view> out;
  const size_t open = schema.find('(');
  if (open == std::string_view::npos) return out;
  int depth = 0;
  char quote = 0;  // inside a string default: str mode="a,b)"
  size_t start = open + 1;
  for (size_t i = open + 1; i < schema.size(); ++i) {
    const char c = schema[i];
    if (quote != 0) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if (c == '(' || c == '[' || c == '<') {
      ++depth;
      continue;
    }
    if (c == '>' && schema[i - 1] == '-') continue;  // an alias arrow: "Tensor(a -> *)"
    if ((c == ')' || c == ']' || c == '>') && depth > 0) {
      --depth;
      continue;
    }
    if (depth != 0 || (c != ',' && c != ')')) continue;
    std::string_view decl = schema.substr(start, i - start);
    decl = decl.substr(0, decl.find('='));
    while (!decl.empty() && decl.front() == ' ') decl.remove_prefix(1);
    while (!decl.empty() && decl.back() == ' ') decl.remove_suffix(1);
    if (!decl.empty() && decl != "*") {
      const size_t space = decl.rfind(' ');
      out.push_back(space == std::string_view::npos ? decl : decl.substr(space + 1));
    }
    start = i + 1;
    if (c == ')') break;
  }
  return out;
}

}  // namespace etb::trace
