// SPDX-License-Identifier: MIT
//
// Structural comparison of two traces, for round-trip tests (JSON -> JSON,
// JSON -> Chakra -> JSON) and tools that check a conversion.
#pragma once

#include <cstddef>
#include <string>

#include "core/model/trace.h"

namespace etb::trace {

struct DiffOptions {
  bool attrs = true;        // compare Node::attrs (name, type, value)
  bool value_types = true;  // compare recorded type strings of values
  bool comms = true;        // compare CommInfo and process groups
  bool header = true;       // pid, time, start/finish ts, rank, world size
  size_t max_diffs = 20;    // stop listing after this many
};

// "" when `a` and `b` hold the same nodes (ids, names, kinds, Chakra node
// types, parents, record-function fields, times, values with their tensors,
// attrs), comms (with bytes and reduce op), process groups and iterations; otherwise one line per difference, e.g.
// "node 42: input 1: tensor numel 16 vs 32". Strings are compared by text,
// so the two traces may intern differently. Schema, path and repairs are
// not compared.
std::string diffTraces(const Trace& a, const Trace& b, const DiffOptions& options = {});

}  // namespace etb::trace
