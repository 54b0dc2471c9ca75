// SPDX-License-Identifier: MIT
//
// Backend-independent planning of one communication call: which process
// group it runs on, how many elements each buffer holds, where the root or
// peer sits inside the group, and the nccl-tests size and bus-bandwidth
// factor used to report it. MPI and NCCL backends both consume a Message, so
// the sizing rules (and their bugs) live in one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/model/trace.h"

namespace etb::replay::comm {

// A process group as the backends see it: global ranks in group-rank order.
struct GroupSpec {
  std::string name;  // "world" for the implicit default group
  std::vector<int64_t> ranks;
  bool is_world = false;
};

// The groups of a trace in the order every rank creates them (sorted by
// name, numerically when decimal), world-sized groups marked as such. Throws
// InputError when a group names a rank outside [0, world_size).
std::vector<GroupSpec> groupsOf(const trace::Trace& trace, int world_size);

struct Message {
  trace::CommType type = trace::CommType::kUnknown;
  trace::DType dtype = trace::DType::kFloat;
  trace::ReduceOp op = trace::ReduceOp::kSum;
  int elem_size = 4;
  int group_size = 1;
  int my_rank = 0;         // this rank inside the group
  int root = -1;           // group-local root (rooted collectives)
  int peer = -1;           // group-local peer (send/recv)
  uint64_t send_elems = 0; // elements read by this rank
  uint64_t recv_elems = 0; // elements written by this rank
  bool in_place = false;   // all_reduce, broadcast, reduce: one buffer
  // all_to_allv: element counts and displacements per group rank.
  std::vector<uint64_t> send_counts, send_displs, recv_counts, recv_displs;
  uint64_t algo_bytes = 0;  // nccl-tests "size" (algbw = size / time)
  double busbw_factor = 0;  // busbw = algbw * factor
};

// Plans `info` (of `node`) on `group` for this process, global rank `rank`.
// `fallback_dtype` is used when the trace recorded none (e.g. the dtype of
// the bound tensor). Throws InputError naming the node on impossible input.
Message planMessage(const trace::Trace& trace, const trace::Node& node,
                    const trace::CommInfo& info, const GroupSpec& group,
                    int rank, trace::DType fallback_dtype);

// The location used in errors about `node`.
SourceLoc locOf(const trace::Trace& trace, const trace::Node& node);

// True for the types that move data between ranks (not wait/init/unknown).
bool isDataCall(trace::CommType type);
// True for the collectives every group member must call in the same order
// (everything data-moving except send/recv).
bool isCollective(trace::CommType type);

}  // namespace etb::replay::comm
