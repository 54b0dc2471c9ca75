// SPDX-License-Identifier: MIT
//
// Device (GPU) time per op, per op kind and per iteration, both sides: the
// original's from the kernels a Kineto link attached to the trace's nodes,
// the replay's from iterations timed with device events.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/trace.h"
#include "replayer/replay_result.h"

namespace etb::replay::detail {

struct IterationRecord;  // replayer/executor.h
struct Plan;             // replayer/op_plan.h

// The original's device time of each selected node (indices into
// trace.nodes): the kernels linked to it and to every node below it, each
// kernel once (a kernel belongs to the innermost op that launched it; it
// counts for the nearest selected node at or above that op, when that node
// is itself linked). -1 for a node with no kernel linked. The generator
// carries these on the nodes it emits (it emits no children).
std::vector<double> originalDeviceUs(const trace::Trace& trace, const std::vector<uint32_t>& selected);

// Fills OpStat/KindStat device times and result.device_time from the
// original's kernels and the `timed` iterations (records with device times;
// empty when the replay did not time the device). Call after fillResult.
// Leaves device_time unset when neither side has any device time.
void fillDeviceTimes(const trace::Trace& trace, const trace::Iteration& it, const Plan& plan,
                     const std::vector<IterationRecord>& timed, ReplayResult& r);

}  // namespace etb::replay::detail
