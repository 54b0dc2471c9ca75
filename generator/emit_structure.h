// SPDX-License-Identifier: MIT
//
// What a generated program keeps of its trace besides the replayed ops. The
// replay modes read more than the ops: --host-time emulate reads the
// iteration's marker (its thread) and every instrumented event whose start or
// end lies in a gap between the ops on that thread (labels, comm wrappers and
// their ops; replayer/host_time.h); --autograd record reads each op's phase
// from the labels above it (autograd::engine..., Optimizer.*;
// replayer/autograd_record.h). So the program keeps those nodes, without
// arguments, and every kept or replayed node keeps its nearest kept ancestor
// as parent. That the replayer still selects exactly the same ops from the
// smaller trace is checked here, not hoped for.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/trace.h"
#include "replayer/op_selection.h"

namespace etb::gen {

struct TraceStructure {
  std::vector<uint32_t> kept;                      // node indices, ascending; none replayed
  std::unordered_map<uint32_t, uint64_t> parent;   // node index -> parent id (absent = root)
  size_t host_events = 0;  // of `kept`, instrumented events in the ops' gaps
  size_t left_out = 0;     // events left out because the replayer would have run them
};

// The structure of iteration `it` of `t`, whose replayed nodes are `selected`.
TraceStructure traceStructure(const trace::Trace& t, const trace::Iteration& it,
                              const std::vector<replay::SelectedNode>& selected);

// The C++ of a table of the kept nodes and a function `function(TraceBuilder&)`
// adding them (generated file text, without the file head).
std::string structureFunction(const trace::Trace& t, const TraceStructure& s,
                              const std::string& function);

}  // namespace etb::gen
