// SPDX-License-Identifier: MIT
//
// Integer inputs that must stay in range for an op not to fault: indices
// into an embedding table, gather/scatter indices, class targets, and
// embedding_bag offsets, packed-sequence lengths. Rules attach to the leaf
// the values come from (the slot itself, or the leaf a sort, view or cast
// took them from); an index that an earlier op computes is whatever that op
// computed.
#pragma once

#include <utility>
#include <vector>

#include "core/model/trace.h"
#include "replayer/op_plan.h"

namespace etb::replay::detail {

// Narrows plan.leaf_init for the leaf slots among `step`'s arguments, from
// the op's index rules and the node's recorded `tensor_range` attr.
void applyIndexRules(const trace::Trace& trace, const trace::Node& node,
                     const PlanStep& step, Plan& plan);

// (argument, size) for each plain index tensor argument of `step` with a
// known bound: the values must lie in [0, size). Empty for other ops.
std::vector<std::pair<uint32_t, int64_t>> indexBounds(const trace::Trace& trace,
                                                      const trace::Node& node,
                                                      const PlanStep& step);

}  // namespace etb::replay::detail
