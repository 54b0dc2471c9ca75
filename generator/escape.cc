// SPDX-License-Identifier: MIT
#include "generator/escape.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace etb::gen {
namespace {
bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool plain(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?'; }
}  // namespace

std::string cLiteral(std::string_view bytes) {
  std::string out = "\"";
  bool after_hex = false;
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (plain(c)) {
      if (after_hex && isHex(ch)) out += "\" \"";
      out += ch;
      after_hex = false;
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02x", c);
    out += buf;
    after_hex = true;
  }
  out += '"';
  return out;
}

std::string sv(std::string_view bytes) { return "ETB_S(" + cLiteral(bytes) + ")"; }

std::string commentText(std::string_view text, size_t max) {
  std::string out;
  for (char ch : text) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(ch);
    char keep = c >= 0x20 && c < 0x7f && c != '\\' ? ch : '?';
    if (keep == '?' && !out.empty() && out.back() == '?') keep = '_';
    out += keep;
  }
  return out;
}

std::string cDouble(double v) {
  if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v)) {
    return v > 0 ? "std::numeric_limits<double>::infinity()"
                 : "-std::numeric_limits<double>::infinity()";
  }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace etb::gen
