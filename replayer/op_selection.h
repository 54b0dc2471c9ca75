// SPDX-License-Identifier: MIT
//
// Which nodes of a trace one replayed iteration runs: what a profiler would
// see executed, the top-most operator on each path from the roots.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/trace.h"

namespace etb::replay {

struct SelectedNode {
  uint32_t index = 0;  // into Trace::nodes
  bool is_comm = false;
};

// The id range [begin, end) of iteration `k` (ProfilerStep markers), or the
// whole trace when it has none. Throws InputError when `k` is out of range.
trace::Iteration chooseIteration(const trace::Trace& trace, int k);

// Walks the call tree from the roots in id order. Selects the top-most
// kOperator on each path whose id lies in `it` (its children are not
// replayed: they run inside it), and every collective, p2p and wait node
// (handed to the communicator) wherever it lies, below a collective or a
// selected operator too (torch 1.13 + gloo mis-parents them). Labels, roots, markers
// and metadata are traversed; operators under c10d:: / record_param_comms
// are not selected (the communicator stands for them), except below a
// c10d:: op that is itself the collective (torch 1.13 + gloo), whose
// "children" are later calls the observer mis-parented. Result in index
// order.
std::vector<SelectedNode> selectNodes(const trace::Trace& trace,
                                      const trace::Iteration& it);

}  // namespace etb::replay
