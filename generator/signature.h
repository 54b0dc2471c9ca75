// SPDX-License-Identifier: MIT
//
// A workload's normalised operator signature: how often each operator (and
// each collective type) runs in the iteration the replayer would replay.
// Shapes, ids, times and order are left out, so two recordings or two
// iterations of one job compare equal while different models do not.
#pragma once

#include <map>
#include <string>

#include "core/model/trace.h"

namespace etb::gen {

using OpSignature = std::map<std::string, uint64_t>;  // op or "comm:all_reduce" -> count

// Of iteration `iteration` (the whole trace when unmarked), via the
// replayer's own op selection. Ranks of a job are summed by the caller.
OpSignature opSignature(const trace::Trace& t, int iteration);

// Weighted Jaccard similarity of two count maps: sum(min) / sum(max), in
// [0, 1]; 1 for identical signatures.
double similarity(const OpSignature& a, const OpSignature& b);

// Share of `whole`'s operator executions whose operator also occurs in
// `part` (how much of a group a representative covers).
double coverage(const OpSignature& part, const OpSignature& whole);

}  // namespace etb::gen
