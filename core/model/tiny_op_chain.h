// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::trace {

// One kind of tiny op in a synthetic chain: its name, overload, schema and
// whether it takes the chain's second leaf tensor as a second input. A
// schema with an `alpha` argument gets alpha = 1.
struct TinyOp {
  const char* name;
  const char* overload;
  const char* schema;
  bool binary;
};

// A trace of `ops` operators on float CPU tensors of `elems` elements:
// x_{i+1} = kinds[i % n](x_i[, w]), with w and x_0 leaves, so each output is
// the next op's input and the replay frees one tensor per op as a recorded
// graph does. Used to time the replayer's own cost per op (et_profile_hw,
// benchmarks/replay_overhead_bench.cc), independent of any recording.
Trace tinyOpChain(const std::vector<TinyOp>& kinds, int ops, int64_t elems, std::string path = "");

}  // namespace etb::trace
