// SPDX-License-Identifier: MIT
//
// Which of an op's inputs are still in the last-level cache when et_replay
// runs it. The microbenchmarks re-read one set of inputs, so their curves
// are cache-warm; in an iteration a tensor last touched many megabytes ago
// (an embedding table updated by the previous step's optimizer, a weight
// read in the forward and updated after the backward) comes from DRAM. The
// model is the reuse distance of an LRU cache: the bytes touched by the
// steps since the tensor's last use; the part of the tensor that the cache
// minus that distance cannot hold is cold (hypothesis (c) of issue 12: the
// DLRM's SGD add_ and lookups ran 2-10x their warm curve).
#pragma once

#include <string>
#include <vector>

#include "core/model/trace.h"
#include "predictor/hw_profile.h"
#include "replayer/op_selection.h"

namespace etb::predict {

// For each selected step of one iteration (after a warm-up iteration, so
// that tensors kept across iterations have a last use): the share of its
// input bytes that come from DRAM, 0..1. `llc_bytes` <= 0: everything warm.
std::vector<double> coldInputShare(const trace::Trace& trace,
                                   const std::vector<replay::SelectedNode>& steps,
                                   double llc_bytes);

// The same with a measured retention curve (MemoryFacts::retention) in
// place of the LRU step: a line of a tensor found after d bytes of other
// traffic is evicted with the curve's share at d (log-linear between
// points, flat beyond the ends); a tensor not seen before is cold.
std::vector<double> coldInputShare(const trace::Trace& trace,
                                   const std::vector<replay::SelectedNode>& steps,
                                   const std::vector<SizePoint>& retention);

// The measured share at distance `d` (the rule above).
double evictedShare(const std::vector<SizePoint>& retention, double d);

// The same for code: for each call of an iteration that repeats, how many
// other kinds ran since its kind last did (its depth in an LRU stack of
// kinds), in the steady state: a kind called once an iteration last ran
// one iteration ago, with every other kind of the iteration in between.
// 0 for the same kind back to back. `kinds[i]` is call i's kind.
std::vector<int> kindReuseDistance(const std::vector<std::string>& kinds);

}  // namespace etb::predict
