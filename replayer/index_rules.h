// SPDX-License-Identifier: MIT
//
// Integer inputs that must stay in range for an op not to fault: indices
// into an embedding table, gather/scatter indices, class targets, and
// embedding_bag offsets. Rules attach to leaf slots only (an index that an
// earlier op computes is whatever that op computed).
#pragma once

#include "core/model/trace.h"
#include "replayer/op_plan.h"

namespace etb::replay::detail {

// Narrows plan.leaf_init for the leaf slots among `step`'s arguments, from
// the op's index rules and the node's recorded `tensor_range` attr.
void applyIndexRules(const trace::Trace& trace, const trace::Node& node,
                     const PlanStep& step, Plan& plan);

}  // namespace etb::replay::detail
