// SPDX-License-Identifier: MIT
//
// Copying nodes between traces, or within one: strings and shapes are
// re-interned in the destination's pools, tensors get new TensorRefs (with
// shifted ids on request, so that copies never alias the original), comm
// infos and process groups follow. Ids are made consistent afterwards by
// renumber().
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model/trace.h"

namespace etb::compose {

// (tensor_id, storage_id): a recorded tensor's identity within one copy.
using TensorKey = std::pair<uint64_t, uint64_t>;
struct TensorKeyHash {
  size_t operator()(const TensorKey& k) const { return k.first * 1000003u ^ k.second; }
};

struct TensorShift {
  uint64_t tensor = 0;   // added to every tensor_id
  uint64_t storage = 0;  // added to every storage_id
  // Inputs to replace whole (chaining a copy to the previous one's outputs),
  // keyed by the source identity, before shifting.
  const std::unordered_map<TensorKey, trace::TensorRef, TensorKeyHash>* replace = nullptr;
};

class NodeCopier {
 public:
  // `dst` and `src` may be the same trace.
  NodeCopier(trace::Trace& dst, const trace::Trace& src);

  // A copy of `n` in dst's terms, ids unchanged.
  trace::Node copy(const trace::Node& n, const TensorShift& shift);

 private:
  trace::StrId str(trace::StrId s);
  trace::Value value(const trace::Value& v, const TensorShift& shift);
  int32_t comm(int32_t index);
  int32_t group(int32_t index);

  trace::Trace& dst_;
  const trace::Trace& src_;
  bool same_;
};

// Everything of `t` but its nodes and kernel events (which the caller
// fills): copying a trace only to clear its nodes costs as much again.
trace::Trace shellOf(const trace::Trace& t);
// The same, moving the pools and tables out of `t` (its nodes stay).
trace::Trace shellOf(trace::Trace&& t);

// Largest tensor and storage id in `t` (0 when it has no tensors).
std::pair<uint64_t, uint64_t> maxTensorIds(const trace::Trace& t);

// Gives the nodes, in their current vector order, the ids 1..n and rewrites
// parents, data dependencies and kernel links to match; then finalize().
// Ids must be unique on entry.
void renumber(trace::Trace& t);

// Adds src's process groups to dst's (by name; the same name with other
// ranks is an InputError).
void mergeProcessGroups(trace::Trace& dst, const trace::Trace& src);

// Rewrites the "## process_group:init ##" node from t.process_groups, so
// that an ET JSON written from `t` reads back with the same groups. When
// there is none, inserts one after the roots with a new id: call
// renumber() afterwards.
void writeProcessGroupNode(trace::Trace& t);

}  // namespace etb::compose
