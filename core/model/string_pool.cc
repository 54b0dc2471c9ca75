// SPDX-License-Identifier: MIT
#include "core/model/string_pool.h"

namespace etb::trace {

StringPool& StringPool::operator=(const StringPool& other) {
  if (this == &other) return *this;
  strings_.clear();
  index_.clear();
  for (const std::string& s : other.strings_) intern(s);
  return *this;
}

StrId StringPool::intern(std::string_view text) {
  auto it = index_.find(text);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<StrId>(strings_.size());
  strings_.emplace_back(text);
  index_.emplace(strings_.back(), id);
  return id;
}

StrId StringPool::find(std::string_view text, bool* found) const {
  auto it = index_.find(text);
  if (found != nullptr) *found = it != index_.end();
  return it == index_.end() ? 0 : it->second;
}

size_t StringPool::memoryBytes() const {
  size_t bytes = index_.size() * (sizeof(std::string_view) + sizeof(StrId) + 16);
  for (const std::string& s : strings_) {
    bytes += sizeof(std::string) + (s.size() > 15 ? s.capacity() + 1 : 0);
  }
  return bytes;
}

IntListPool& IntListPool::operator=(const IntListPool& other) {
  if (this == &other) return *this;
  lists_.clear();
  index_.clear();
  for (const auto& l : other.lists_) intern(l);
  return *this;
}

size_t IntListPool::Hash::operator()(const std::vector<int64_t>* v) const {
  // FNV-1a over the values; shapes are short so this is cheap.
  uint64_t h = 1469598103934665603ull;
  for (int64_t x : *v) {
    h ^= static_cast<uint64_t>(x);
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h ^ v->size());
}

ListId IntListPool::intern(const std::vector<int64_t>& values) {
  auto it = index_.find(&values);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<ListId>(lists_.size());
  lists_.push_back(values);
  index_.emplace(&lists_.back(), id);
  return id;
}

size_t IntListPool::memoryBytes() const {
  size_t bytes = index_.size() * (sizeof(void*) + sizeof(ListId) + 16);
  for (const auto& l : lists_) {
    bytes += sizeof(l) + l.capacity() * sizeof(int64_t);
  }
  return bytes;
}

}  // namespace etb::trace
