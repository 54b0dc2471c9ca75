// SPDX-License-Identifier: MIT
//
// The cross-rank part of a prediction: each rank walks its steps in order;
// a collective starts when the last member of its group arrives (collectives
// of a group are matched by issue order, as every backend matches them) and
// ends its transfer time later; a synchronous one holds its caller until
// then, an async one only its wait (or the iteration's end). Time is one
// clock for all ranks, so ranks that share cores slow each other down.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "predictor/predictor.h"

namespace etb::predict {

struct Step {
  enum class Kind { kCompute, kCollective, kWait } kind = Kind::kCompute;
  size_t op = 0;  // index into RankPrediction::ops
  double us = 0;
  // kCollective: which instance (group + issue order) and its members.
  std::string key;
  int members = 1;
  bool async = false;
  // kCollective / kWait: what a wait completes; seq < 0 = everything pending.
  int32_t pg = -1;
  int64_t seq = -1;
};

// Runs every rank's steps; fills iter_us, exposed_comm_us and each op's
// start_us. `cores`: the host cores the ranks share (0 = as many as they
// need). Computing ranks and collectives in flight (host backends move and
// reduce data on the CPU: a collective wants its members' cores) share them
// evenly: with more demand than cores each runs at cores / demand, as the
// kernel time-slices equal-priority processes; a rank blocked on
// communication leaves its share to the others. Throws InputError when
// ranks block on collectives that never complete (mismatched sequences),
// naming the rank and the collective.
void runSchedule(const std::vector<std::vector<Step>>& steps, std::vector<RankPrediction>& ranks,
                 int cores = 0);

}  // namespace etb::predict
