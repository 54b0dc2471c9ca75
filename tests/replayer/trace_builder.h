// SPDX-License-Identifier: MIT
//
// Builds small traces in code for the replay tests and the overhead
// benchmark: a root, one thread node, and operators under it.
#pragma once

#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::test {

class TraceBuilder {
 public:
  TraceBuilder();
  // A float tensor with its own storage (or `storage` when given).
  trace::Value tensor(const std::vector<int64_t>& shape, trace::DType dtype = trace::DType::kFloat,
                      uint64_t storage = 0);
  // An operator node under the thread root, or under the label that
  // under() named; returns its id.
  trace::NodeId op(const std::string& schema, std::vector<trace::Value> inputs,
                   std::vector<trace::Value> outputs);
  // A label node (record_function) under the thread root; returns its id.
  trace::NodeId label(const std::string& name);
  // Later ops go under `parent` (a label's id; 2 = the thread root).
  void under(trace::NodeId parent) { parent_ = parent; }
  // A record_param_comms collective node `id` under the thread root, with
  // `info` appended to the trace's comms.
  trace::NodeId collective(trace::NodeId id, trace::CommInfo info, std::vector<trace::Value> inputs = {});
  trace::Trace& trace() { return t_; }
  trace::Trace finish();

 private:
  trace::Trace t_;
  trace::NodeId next_id_ = 3;
  trace::NodeId parent_ = 2;
};

// An int[] argument as the observer records it (GenericList[Int]).
trace::Value intList(trace::Trace& t, const std::vector<int64_t>& xs);

// A trace of one aten::ones([numel]) (float): a fresh output of numel * 4
// bytes written once per iteration, for tests that count page faults.
trace::Trace onesTrace(int64_t numel);

}  // namespace etb::test
