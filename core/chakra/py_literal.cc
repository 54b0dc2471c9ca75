// SPDX-License-Identifier: MIT
#include "core/chakra/py_literal.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace etb::trace::pylit {
namespace {
constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  bool parseTop(Lit* out) {
    if (!value(out, 0)) return false;
    skipSpace();
    return pos_ == s_.size();
  }

 private:
  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' ||
                                s_[pos_] == '\t' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  bool value(Lit* out, int depth) {
    if (depth > kMaxDepth) return false;
    skipSpace();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '[' || c == '(') return list(out, depth, c == '[' ? ']' : ')');
    if (c == '\'' || c == '"') return str(out);
    if (word("None")) { out->kind = Kind::kNone; return true; }
    if (word("True")) { out->kind = Kind::kBool; out->b = true; return true; }
    if (word("False")) { out->kind = Kind::kBool; out->b = false; return true; }
    return number(out);
  }

  bool list(Lit* out, int depth, char close) {
    out->kind = Kind::kList;
    ++pos_;
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == close) { ++pos_; return true; }
    while (true) {
      out->items.emplace_back();
      if (!value(&out->items.back(), depth + 1)) return false;
      skipSpace();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == close) { ++pos_; return true; }
      if (s_[pos_] != ',') return false;
      ++pos_;
      skipSpace();
      // Python allows a trailing comma: (1,) and [1, 2,].
      if (pos_ < s_.size() && s_[pos_] == close) { ++pos_; return true; }
    }
  }

  bool str(Lit* out) {
    const char quote = s_[pos_++];
    out->kind = Kind::kString;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == quote) return true;
      if (c != '\\') { out->s.push_back(c); continue; }
      if (pos_ >= s_.size()) return false;
      c = s_[pos_++];
      switch (c) {
        case 'n': out->s.push_back('\n'); break;
        case 't': out->s.push_back('\t'); break;
        case 'r': out->s.push_back('\r'); break;
        case '0': out->s.push_back('\0'); break;
        case 'x': {
          if (pos_ + 2 > s_.size()) return false;
          const std::string hex(s_.substr(pos_, 2));
          char* end = nullptr;
          const long v = std::strtol(hex.c_str(), &end, 16);
          if (end != hex.c_str() + 2) return false;
          out->s.push_back(static_cast<char>(v));
          pos_ += 2;
          break;
        }
        default: out->s.push_back(c); break;  // \\ \' \" and anything else
      }
    }
    return false;
  }

  bool number(Lit* out) {
    const size_t start = pos_;
    if (word("inf")) { out->kind = Kind::kFloat; out->d = INFINITY; return true; }
    if (word("-inf")) { out->kind = Kind::kFloat; out->d = -INFINITY; return true; }
    if (word("nan")) { out->kind = Kind::kFloat; out->d = NAN; return true; }
    bool is_float = false;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
      } else {
        break;
      }
      ++pos_;
    }
    if (pos_ == start) return false;
    const std::string text(s_.substr(start, pos_ - start));
    char* end = nullptr;
    errno = 0;
    if (!is_float) {
      out->kind = Kind::kInt;
      out->i = std::strtoll(text.c_str(), &end, 10);
      if (errno == ERANGE && text[0] != '-') {
        // uint64 values above INT64_MAX (rf_ids, pointers) keep their bits.
        errno = 0;
        out->i = static_cast<int64_t>(std::strtoull(text.c_str(), &end, 10));
      }
    } else {
      out->kind = Kind::kFloat;
      out->d = std::strtod(text.c_str(), &end);
    }
    return errno == 0 && end == text.c_str() + text.size();
  }

  std::string_view s_;
  size_t pos_ = 0;
};
}  // namespace

std::optional<Lit> parse(std::string_view text) {
  Lit out;
  Parser p(text);
  if (!p.parseTop(&out)) return std::nullopt;
  return out;
}

void appendString(std::string& out, std::string_view s) {
  out.push_back('\'');
  for (const char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('\'');
}

void appendDouble(std::string& out, double d) {
  if (std::isnan(d)) { out += "nan"; return; }
  if (std::isinf(d)) { out += d > 0 ? "inf" : "-inf"; return; }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", d);
  out += buf;
  // Keep it a float literal when read back ("1" -> "1.0").
  bool has_mark = false;
  for (const char* p = buf; *p != '\0'; ++p) {
    if (*p == '.' || *p == 'e' || *p == 'n' || *p == 'i') has_mark = true;
  }
  if (!has_mark) out += ".0";
}

void append(std::string& out, const Lit& lit) {
  switch (lit.kind) {
    case Kind::kNone: out += "None"; break;
    case Kind::kBool: out += lit.b ? "True" : "False"; break;
    case Kind::kInt: out += std::to_string(lit.i); break;
    case Kind::kFloat: appendDouble(out, lit.d); break;
    case Kind::kString: appendString(out, lit.s); break;
    case Kind::kList:
      out.push_back('[');
      for (size_t i = 0; i < lit.items.size(); ++i) {
        if (i > 0) out += ", ";
        append(out, lit.items[i]);
      }
      out.push_back(']');
      break;
  }
}

}  // namespace etb::trace::pylit
