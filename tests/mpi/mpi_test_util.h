// SPDX-License-Identifier: MIT
//
// Helpers for the mpirun tests: in-memory traces of communication nodes,
// and the communicator for this process.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "core/model/trace.h"
#include "replayer/comm/communicator.h"

namespace etb::test {

// A trace holding only communication nodes, in call order.
class CommTraceBuilder {
 public:
  explicit CommTraceBuilder(std::string path = "in-memory.et.json") { trace_.path = std::move(path); }
  // Returns the index into Trace::process_groups.
  int32_t addGroup(const std::string& name, std::vector<int64_t> ranks);
  // Adds a record_param_comms node for `info`; returns the node id.
  trace::NodeId add(trace::CommInfo info);
  trace::Trace& trace() { return trace_; }

 private:
  trace::Trace trace_;
  trace::NodeId next_id_ = 2;
};

trace::CommInfo commInfo(trace::CommType type, uint64_t in_elems, uint64_t out_elems,
                         trace::DType dtype = trace::DType::kFloat, int32_t pg = -1);

// The process-wide communicator (MPI under mpirun; the backend named by
// ETB_TEST_COMM when set, e.g. gloo), created once.
replay::Communicator& testComm();

// Runs the node `id` of `t` with the given bound tensors; waits if async.
void runNode(replay::Communicator& comm, const trace::Trace& t, trace::NodeId id,
             std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs);

}  // namespace etb::test
