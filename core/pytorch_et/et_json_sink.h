// SPDX-License-Identifier: MIT
//
// Where the ET JSON decoder puts what it interns: strings, int lists and
// tensors. One thread writes straight into the Trace; each reader thread of
// the streamed read keeps a private cache of the pools (hits take no lock,
// and nearly every string in a trace repeats) and its own tensor list,
// which the merge rebases. Internal to the ET JSON reader.
#pragma once

#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/trace.h"

namespace etb::trace::detail {

class NodeSink {
 public:
  // Single-threaded: everything goes into `t`.
  explicit NodeSink(Trace& t) : t_(t), tensors_(&t.tensors) {}
  // Shared: `t`'s pools only under `pools`; tensors go to `tensors`.
  NodeSink(Trace& t, std::mutex& pools, std::vector<TensorRef>* tensors);

  StrId str(std::string_view s) {
    if (pools_ == nullptr) return t_.strings.intern(s);
    const auto it = strs_.find(s);
    return it != strs_.end() ? it->second : strMiss(s);
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
  std::unordered_map<std::string_view, StrId> strs_;
  std::vector<std::string_view> views_;
  std::unordered_map<const std::vector<int64_t>*, ListId, ListHash, ListEq> lists_;
};

}  // namespace etb::trace::detail
