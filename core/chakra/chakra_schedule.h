// SPDX-License-Identifier: MIT
//
// Execution order and time, written the way simulators read them: Chakra's
// classic feeder resolves only data_deps, ASTRA-sim's FeederV3 resolves
// data_deps and ctrl_deps, and both run a node for duration_micros.
//
// A PyTorch ET records a call tree (ctrl_deps = the caller) but no order.
// When the trace carries no data_deps of its own we synthesize them:
//  - Flattening: every op, label and parent stays a node, in call (id)
//    order, and carries its EXCLUSIVE time: its measured time minus that of
//    its timed children on the same thread. A parent's node is its own time
//    placed before its children, so the chain of a thread sums to the
//    thread's measured time and nothing is counted twice (what Chakra's
//    converter does with the linker's exclusive durations).
//  - Order: each node depends on the previous node of its thread; when
//    another thread ran in between (ids are global call order), also on
//    that thread's latest node, so a hand-off (forward -> autograd thread)
//    is kept and only the first node of the trace is ready at the start.
//  - A collective or send/recv depends on the last op that wrote one of its
//    input tensors (by storage id), and carries its whole measured time; the
//    nodes beneath it carry none (the simulator models the transfer).
//  - A wait depends on the collective it waits for and carries no time: the
//    simulator decides how long it blocks.
//  - A GPU kernel node depends on the op that launched it (its parent) and on
//    the previous kernel of its stream.
//  - Root and metadata nodes are in the chain too (they carry no time), so
//    a data_deps-only feeder has exactly one node ready at the start.
// Durations are rounded to whole microseconds with the rounding error carried
// along each thread, so a thread's sum stays within 0.5 us of the measured sum.
// A trace that already has data_deps (read from Chakra) keeps its own order
// and durations.
#pragma once

#include <vector>

#include "core/model/trace.h"

namespace etb::trace::chakra {

// A GPU kernel the profiler attached (Trace::kernels), written as a GPU
// compute node after the trace's nodes: it depends on the op that launched
// it and on the previous kernel of its stream; a collective depends on the
// last kernel of every stream launched before it (NCCL waits for the
// compute stream). Kernels beneath a collective are not written: the
// simulator models the transfer.
struct KernelNode {
  size_t kernel = 0;  // index into Trace::kernels
  NodeId id = 0;      // above every node id of the trace
  std::vector<NodeId> data;
  int64_t micros = 0;
};

struct Schedule {
  bool synthesized = false;               // data_deps built here
  std::vector<std::vector<NodeId>> data;  // per node index, ids
  std::vector<int64_t> micros;            // duration_micros to write; <0 = none
  std::vector<bool> ctrl;                 // write the parent as a ctrl_dep
  std::vector<KernelNode> kernels;        // only for a synthesized order
};

Schedule planSchedule(const Trace& t);

// True for nodes in their thread's chain (all but GPU kernel nodes).
bool isScheduled(const Node& n);

}  // namespace etb::trace::chakra
