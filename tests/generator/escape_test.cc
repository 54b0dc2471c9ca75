// SPDX-License-Identifier: MIT
#include "generator/escape.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

namespace etb::gen {
namespace {

// An independent reader of what cLiteral writes: "..." pieces separated by
// spaces, with \xHH escapes (which, as in C++, take every hex digit that
// follows). Fails the test on anything a compiler would not read the same.
std::string decode(const std::string& lit) {
  std::string out;
  size_t i = 0;
  while (i < lit.size()) {
    EXPECT_EQ(lit[i], '"') << lit;
    ++i;
    while (i < lit.size() && lit[i] != '"') {
      if (lit[i] == '\\') {
        EXPECT_EQ(lit[i + 1], 'x') << lit;
        size_t j = i + 2;
        unsigned v = 0;
        while (j < lit.size() && std::isxdigit(static_cast<unsigned char>(lit[j]))) {
          v = v * 16 + static_cast<unsigned>(std::stoi(std::string(1, lit[j]), nullptr, 16));
          ++j;
        }
        EXPECT_LT(v, 256u) << "hex escape absorbed a following digit: " << lit;
        out += static_cast<char>(v);
        i = j;
      } else {
        EXPECT_TRUE(lit[i] >= 0x20 && lit[i] < 0x7f && lit[i] != '?') << lit;
        out += lit[i++];
      }
    }
    ++i;  // closing quote
    while (i < lit.size() && lit[i] == ' ') ++i;
  }
  return out;
}

TEST(Escape, LiteralReadsBackExactly) {
  for (const std::string& s :
       {std::string("plain"), std::string("q\"b\\n\nt\t*/?\?/#include R\"(x)\""),
        std::string("\xff\xfe\x80\xc3"), std::string("\x01" "F0ab"), std::string("a\0b", 3),
        std::string(5000, 'y') + "\x7f" "7"}) {
    EXPECT_EQ(decode(cLiteral(s)), s);
  }
}

TEST(Escape, RandomBytesReadBackExactly) {
  std::mt19937 rng(42);
  for (int k = 0; k < 500; ++k) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    EXPECT_EQ(decode(cLiteral(s)), s);
  }
}

TEST(Escape, CommentCannotEndOrSpliceOrTrigraph) {
  const std::string c = commentText("a */ b \\\n#include ?\?/ \xff end");
  EXPECT_EQ(c.find('\n'), std::string::npos);
  EXPECT_EQ(c.find('\\'), std::string::npos);
  EXPECT_EQ(c.find("??"), std::string::npos);
  for (char ch : c) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << c;
  EXPECT_EQ(commentText(std::string(500, 'z'), 10), std::string(10, 'z') + "...");
}

TEST(Escape, DoublesRoundTrip) {
  for (double v : {0.0, -1.5, 1e-300, 3.141592653589793, 1e300}) {
    EXPECT_EQ(std::strtod(cDouble(v).c_str(), nullptr), v) << cDouble(v);
  }
  EXPECT_NE(cDouble(1.0 / 0.0).find("infinity"), std::string::npos);
}

}  // namespace
}  // namespace etb::gen
