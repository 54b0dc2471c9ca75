// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace etb::trace {

// Interned string handle. 0 is always the empty string.
using StrId = uint32_t;

// Owns one copy of every distinct string (op names, schemas, type strings,
// devices). Handles stay valid for the pool's lifetime; views returned by
// get() stay valid too (strings live in a deque and never move).
class StringPool {
 public:
  StringPool() { intern(""); }
  StringPool(const StringPool& other) { *this = other; }
  StringPool& operator=(const StringPool& other);
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;

  StrId intern(std::string_view text);
  std::string_view get(StrId id) const { return strings_[id]; }
  // Returns 0 (the empty string's id) and sets *found=false when absent.
  StrId find(std::string_view text, bool* found = nullptr) const;
  size_t size() const { return strings_.size(); }
  // Bytes held by the strings and the index (an estimate for memory reports).
  size_t memoryBytes() const;

 private:
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, StrId> index_;
};

// Interns small integer lists (shapes, strides) so that the millions of
// repeated shapes in a large trace cost one copy each. Id 0 is the empty list.
using ListId = uint32_t;

class IntListPool {
 public:
  IntListPool() { intern({}); }
  IntListPool(const IntListPool& other) { *this = other; }
  IntListPool& operator=(const IntListPool& other);
  IntListPool(IntListPool&&) = default;
  IntListPool& operator=(IntListPool&&) = default;

  ListId intern(const std::vector<int64_t>& values);
  const std::vector<int64_t>& get(ListId id) const { return lists_[id]; }
  size_t size() const { return lists_.size(); }
  size_t memoryBytes() const;

 private:
  struct Hash {
    size_t operator()(const std::vector<int64_t>* v) const;
  };
  struct Eq {
    bool operator()(const std::vector<int64_t>* a,
                    const std::vector<int64_t>* b) const {
      return *a == *b;
    }
  };
  std::deque<std::vector<int64_t>> lists_;
  std::unordered_map<const std::vector<int64_t>*, ListId, Hash, Eq> index_;
};

}  // namespace etb::trace
