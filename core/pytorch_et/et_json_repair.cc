// SPDX-License-Identifier: MIT
#include "core/pytorch_et/et_json_repair.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

namespace etb::trace::detail {
namespace {

enum class Fix : uint8_t {
  kControlChar,
  kStrayQuote,
  kBadEscape,
  kBadUtf8,
  kUnterminatedString,
  kStrayComma,
  kMissingComma,
  kUnmatchedCloser,
  kMissingCloser,
  kBareNonFinite,
  kGarbage,
  kTruncated,
  kCount,
};
constexpr std::array<const char*, static_cast<size_t>(Fix::kCount)> kFixNames{{
    "unescaped control characters in strings",
    "unescaped quotes in strings",
    "lone backslashes in strings",
    "invalid UTF-8 bytes replaced",
    "unterminated string closed",
    "stray commas dropped",
    "missing commas inserted",
    "unmatched closing brackets dropped",
    "missing closing brackets inserted",
    "bare nan/inf quoted",
    "stray bytes dropped",
    "truncated tail cut back to the last complete node",
}};

// What a container expects next.
enum class Expect : uint8_t { kFirst, kKey, kColon, kValue, kCommaOrClose };

struct Frame {
  char open;                // '{' or '['
  Expect expect;
  size_t after_last = 0;    // out offset just after the last complete child
  size_t comma_at = 0;      // out offset of the last comma written
};

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool startsValue(char c) {
  return c == '"' || c == '{' || c == '[' || c == '-' || (c >= '0' && c <= '9') ||
         c == 't' || c == 'f' || c == 'n';
}

bool isTokenChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         c == '-' || c == '+' || c == '.' || c == '_';
}

// Length of a valid UTF-8 sequence starting at s[i], or 0 when invalid.
size_t utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  }
  return n;
}

class Repairer {
 public:
  explicit Repairer(std::string_view in) : in_(in) { out_.reserve(in.size() + in.size() / 32 + 64); }

  JsonRepair run() {
    while (i_ < in_.size()) step();
    finish();
    JsonRepair r;
    r.text = std::move(out_);
    r.first_defect = first_defect_;
    for (size_t k = 0; k < counts_.size(); ++k) {
      if (counts_[k] > 0) {
        r.fixes.push_back(std::string(kFixNames[k]) + " (" + std::to_string(counts_[k]) + ")");
      }
    }
    return r;
  }

 private:
  void note(Fix f, size_t at) {
    ++counts_[static_cast<size_t>(f)];
    if (first_defect_ == std::string_view::npos) first_defect_ = at;
  }

  void step() {
    const char c = in_[i_];
    if (isSpace(c)) {
      out_.push_back(c);
      ++i_;
    } else if (c == '"') {
      const bool key = beginValue(true);
      string(key);
      endValue(key);
    } else if (c == '{' || c == '[') {
      beginValue(false);
      stack_.push_back(Frame{c, Expect::kFirst, 0, 0});
      out_.push_back(c);
      stack_.back().after_last = out_.size();
      ++i_;
    } else if (c == '}' || c == ']') {
      closer(c);
    } else if (c == ',') {
      comma();
    } else if (c == ':') {
      if (!stack_.empty() && stack_.back().expect == Expect::kColon) {
        stack_.back().expect = Expect::kValue;
        out_.push_back(':');
      } else {
        note(Fix::kGarbage, i_);
      }
      ++i_;
    } else if (isTokenChar(c)) {
      token();
    } else {
      note(Fix::kGarbage, i_);
      ++i_;
    }
  }

  // Called before a value or key; inserts a missing comma. Returns true when
  // the string about to be read is an object key.
  bool beginValue(bool is_string) {
    if (stack_.empty()) return false;
    Frame& f = stack_.back();
    if (f.expect == Expect::kCommaOrClose) {
      note(Fix::kMissingComma, i_);
      f.comma_at = out_.size();
      out_.push_back(',');
      f.expect = f.open == '{' ? Expect::kKey : Expect::kValue;
    }
    if (f.open == '{' && (f.expect == Expect::kFirst || f.expect == Expect::kKey)) {
      if (!is_string) {
        // A container where a key belongs: the key is lost; keep going.
        note(Fix::kGarbage, i_);
      }
      return is_string;
    }
    return false;
  }

  void endValue(bool was_key) {
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    if (was_key) {
      f.expect = Expect::kColon;
      return;
    }
    f.expect = Expect::kCommaOrClose;
    f.after_last = out_.size();
  }

  // Does the quote at in_[q] end the string? Only when what follows is
  // valid in the enclosing container: a key needs ':'; an array element
  // needs ',' or ']' (and a following string that is not a key); an object
  // value needs ',' or '}' (and a following string that is a key).
  bool quoteEnds(size_t q, bool key) const {
    size_t j = skipSpace(q + 1);
    if (j >= in_.size() || stack_.empty()) return true;
    const char d = in_[j];
    if (key) return d == ':';
    const bool in_array = stack_.back().open == '[';
    if (d == ']') return in_array;
    if (d == '}') return !in_array;
    if (d == '"') return true;  // a missing comma
    if (d != ',') return false;
    const size_t k = skipSpace(j + 1);
    if (k >= in_.size()) return true;
    if (in_[k] == ']' || in_[k] == '}') return true;  // stray comma
    if (in_[k] != '"') return startsValue(in_[k]);
    size_t m = k + 1;  // the next string's end, then what follows it
    while (m < in_.size() && in_[m] != '"' && in_[m] != '\n') m += in_[m] == '\\' ? 2 : 1;
    const size_t e = skipSpace(m + 1);
    const bool next_is_key = e < in_.size() && in_[e] == ':';
    return in_array ? !next_is_key : next_is_key;
  }

  size_t skipSpace(size_t j) const {
    while (j < in_.size() && isSpace(in_[j])) ++j;
    return j;
  }

  void string(bool key) {
    out_.push_back('"');
    ++i_;
    while (i_ < in_.size()) {
      const char c = in_[i_];
      const auto u = static_cast<unsigned char>(c);
      if (c == '"') {
        if (quoteEnds(i_, key)) {
          out_.push_back('"');
          ++i_;
          return;
        }
        note(Fix::kStrayQuote, i_);
        out_ += "\\\"";
        ++i_;
      } else if (c == '\\') {
        escape();
      } else if (u < 0x20) {
        note(Fix::kControlChar, i_);
        static const char* kHex = "0123456789abcdef";
        out_ += "\\u00";
        out_.push_back(kHex[u >> 4]);
        out_.push_back(kHex[u & 15]);
        ++i_;
      } else if (u < 0x80) {
        out_.push_back(c);
        ++i_;
      } else {
        const size_t n = utf8Length(in_, i_);
        if (n == 0) {
          note(Fix::kBadUtf8, i_);
          out_.push_back('?');
          ++i_;
        } else {
          out_.append(in_.data() + i_, n);
          i_ += n;
        }
      }
    }
    note(Fix::kUnterminatedString, i_);
    out_.push_back('"');
  }

  void escape() {
    const char n = i_ + 1 < in_.size() ? in_[i_ + 1] : '\0';
    bool ok = std::strchr("\"\\/bfnrt", n) != nullptr && n != '\0';
    if (n == 'u') {
      ok = i_ + 5 < in_.size();
      for (size_t k = 2; ok && k < 6; ++k) ok = std::isxdigit(static_cast<unsigned char>(in_[i_ + k])) != 0;
    }
    if (ok) {
      out_.push_back('\\');
      out_.push_back(n);
      i_ += 2;
    } else {
      note(Fix::kBadEscape, i_);
      out_ += "\\\\";
      ++i_;
    }
  }

  void closer(char c) {
    const char want = c == '}' ? '{' : '[';
    const bool open = std::any_of(stack_.begin(), stack_.end(),
                                  [&](const Frame& f) { return f.open == want; });
    if (!open) {
      note(Fix::kUnmatchedCloser, i_);
      ++i_;
      return;
    }
    // Close whatever is still open inside the container this closer ends.
    while (stack_.back().open != want) {
      note(Fix::kMissingCloser, i_);
      closeTop();
    }
    closeTop();
    ++i_;
  }

  // Writes the closer for the innermost container, fixing what precedes it.
  void closeTop() {
    Frame f = stack_.back();
    if (f.expect == Expect::kKey || (f.expect == Expect::kValue && f.open == '[')) {
      note(Fix::kStrayComma, i_);  // "[1, 2, ]"
      out_.resize(f.after_last);
    } else if (f.expect == Expect::kColon || f.expect == Expect::kValue) {
      note(Fix::kGarbage, i_);  // a key without its value
      out_.resize(f.after_last);
    }
    out_.push_back(f.open == '{' ? '}' : ']');
    stack_.pop_back();
    endValue(false);
  }

  void comma() {
    if (!stack_.empty() && stack_.back().expect == Expect::kCommaOrClose) {
      Frame& f = stack_.back();
      f.comma_at = out_.size();
      out_.push_back(',');
      f.expect = f.open == '{' ? Expect::kKey : Expect::kValue;
    } else {
      note(Fix::kStrayComma, i_);
    }
    ++i_;
  }

  void token() {
    size_t j = i_;
    while (j < in_.size() && isTokenChar(in_[j])) ++j;
    const std::string_view tok = in_.substr(i_, j - i_);
    const bool key = beginValue(false);
    (void)key;
    std::string lower(tok);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "nan" || lower == "inf" || lower == "-inf" || lower == "infinity" ||
        lower == "-infinity") {
      note(Fix::kBareNonFinite, i_);
      out_ += lower[0] == '-' ? "\"-inf\"" : (lower == "nan" ? "\"nan\"" : "\"inf\"");
    } else {
      out_.append(tok);
    }
    i_ = j;
    endValue(false);
  }

  // End of input: a truncated document is cut back to the last complete
  // child of the node array (or of the top object) and closed.
  void finish() {
    if (stack_.empty()) return;
    note(Fix::kTruncated, in_.size());
    const size_t keep = std::min<size_t>(1, stack_.size() - 1);
    out_.resize(stack_[keep].after_last);
    stack_.resize(keep + 1);
    stack_.back().expect = Expect::kCommaOrClose;
    while (!stack_.empty()) {
      out_.push_back(stack_.back().open == '{' ? '}' : ']');
      stack_.pop_back();
    }
  }

  std::string_view in_;
  std::string out_;
  size_t i_ = 0;
  std::vector<Frame> stack_;
  std::array<size_t, static_cast<size_t>(Fix::kCount)> counts_{};
  size_t first_defect_ = std::string_view::npos;
};

}  // namespace

JsonRepair repairJson(std::string_view text) { return Repairer(text).run(); }

uint64_t lineAt(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<uint64_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

}  // namespace etb::trace::detail
