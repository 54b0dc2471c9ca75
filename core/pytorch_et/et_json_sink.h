// SPDX-License-Identifier: MIT
//
// Where the ET JSON decoder puts what it interns: strings, int lists and
// tensors. One thread writes straight into the Trace; each reader thread of
// the streamed read keeps a private cache of the pools (hits take no lock,
// and nearly every string in a trace repeats) and its own tensor list,
// which the merge rebases. Internal to the ET JSON reader.
#pragma once

#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/trace.h"

namespace etb::trace::detail {

// string -> id for the few hundred distinct strings a trace repeats
// millions of times: open addressing, and a hash of the length and three
// 8-byte words (start, middle, end) instead of every byte.
class StrCache {
 public:
  static constexpr StrId kMissing = ~StrId{0};

  StrId find(std::string_view s) const {
    if (slots_.empty()) return kMissing;
    const uint64_t h = hashOf(s);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.id == kMissing) return kMissing;
      if (slot.hash == h && slot.text == s) return slot.id;
    }
  }
  // `s` must outlive the cache.
  void insert(std::string_view s, StrId id);

 private:
  struct Slot {
    std::string_view text;
    uint64_t hash = 0;
    StrId id = kMissing;
  };
  static uint64_t hashOf(std::string_view s) {
    const size_t n = s.size();
    uint64_t a = 0, b = 0, c = 0;
    if (n >= 8) {
      std::memcpy(&a, s.data(), 8);
      std::memcpy(&b, s.data() + (n - 8) / 2, 8);
      std::memcpy(&c, s.data() + n - 8, 8);
    } else if (n > 0) {
      std::memcpy(&a, s.data(), n);
    }
    uint64_t h = (n + 1) * 0x9E3779B97F4A7C15ull;
    h = (h ^ a) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 31) ^ b) * 0x94D049BB133111EBull;
    h = (h ^ (h >> 29) ^ c) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0, used_ = 0;
};

class NodeSink {
 public:
  // Single-threaded: everything goes into `t`.
  explicit NodeSink(Trace& t) : t_(t), tensors_(&t.tensors) {}
  // Shared: `t`'s pools only under `pools`; tensors go to `tensors`.
  NodeSink(Trace& t, std::mutex& pools, std::vector<TensorRef>* tensors);

  StrId str(std::string_view s) {
    if (pools_ == nullptr) return t_.strings.intern(s);
    const StrId id = strs_.find(s);
    return id != StrCache::kMissing ? id : strMiss(s);
  }
  // Text of an id this sink returned.
  std::string_view view(StrId id) const { return pools_ == nullptr ? t_.strings.get(id) : views_[id]; }
  ListId list(const std::vector<int64_t>& values);
  uint32_t tensor(const TensorRef& ref) {
    tensors_->push_back(ref);
    return static_cast<uint32_t>(tensors_->size() - 1);
  }
  std::vector<TensorRef>* tensors() { return tensors_; }
  void setTensors(std::vector<TensorRef>* tensors) { tensors_ = tensors; }

 private:
  struct ListHash {
    size_t operator()(const std::vector<int64_t>* v) const;
  };
  struct ListEq {
    bool operator()(const std::vector<int64_t>* a, const std::vector<int64_t>* b) const { return *a == *b; }
  };
  StrId strMiss(std::string_view s);

  Trace& t_;
  std::mutex* pools_ = nullptr;
  std::vector<TensorRef>* tensors_;
  // Keys and views point into t_'s pools, whose entries never move.
  StrCache strs_;
  std::vector<std::string_view> views_;
  std::unordered_map<const std::vector<int64_t>*, ListId, ListHash, ListEq> lists_;
};

}  // namespace etb::trace::detail
