// SPDX-License-Identifier: MIT
//
// Pre-flight: before replaying, every rank summarises its sequence of
// collectives per process group and the ranks compare them, so that traces
// which would deadlock (a missing, extra or resized collective on one rank)
// stop with an InputError naming the first mismatch instead.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/model/trace.h"
#include "replayer/comm/comm_plan.h"

namespace etb::replay::comm {

// Gathers one word vector per rank, on every rank, in rank order.
using AllGatherFn =
    std::function<std::vector<std::vector<uint64_t>>(const std::vector<uint64_t>&)>;

// Collective calls must go to the same group in the same order with the
// same type, dtype, per-rank size and root on every member of the group.
// Every rank ends in the same state: all return, or all throw InputError
// (naming group, index, rank and node) -- a rank whose own trace is bad
// ships its error to the others instead of leaving them waiting.
// Returns the trace's groups (groupsOf), which every rank then creates.
std::vector<GroupSpec> runPreflight(const trace::Trace& trace, const GroupSpec& world, int rank,
                                    const AllGatherFn& all_gather);

// The group a call runs on: its process group, or `world` when it has none.
const GroupSpec& groupOfCall(const trace::Trace& trace, const trace::CommInfo& info,
                             const std::vector<GroupSpec>& groups, const GroupSpec& world);

}  // namespace etb::replay::comm
