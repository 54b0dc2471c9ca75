// SPDX-License-Identifier: MIT
//
// Turns the per-iteration records of a replay into ReplayResult figures.
#pragma once

#include <vector>

#include "replayer/executor.h"
#include "replayer/replay_result.h"

namespace etb::replay::detail {

// Fills ops, kinds, collectives, timeline, replay/original iteration times
// and the coverage from `plan` and the measured `records`.
void fillResult(const trace::Trace& trace, const trace::Iteration& it, const Plan& plan,
                const std::vector<IterationRecord>& records, int world_size,
                ReplayResult& result);

// Each op's minor page faults: the median over `counted` (records taken
// with fault counting on, result.ops in plan order). Nothing when empty.
void fillStepFaults(const std::vector<IterationRecord>& counted, ReplayResult& result);

}  // namespace etb::replay::detail
