// SPDX-License-Identifier: MIT
#pragma once

#include <string>

#include "core/model/trace.h"

namespace etb::trace {

struct LinkStats {
  size_t operators = 0;         // operator nodes in the trace
  size_t linked_operators = 0;  // of those, given a duration
  size_t linked_nodes = 0;      // any node given a duration
  size_t kernels = 0;           // GPU kernels attached
  size_t name_mismatches = 0;   // linked nodes whose event has another name
  std::string key;              // "Record function id" or "External id"
};

// Reads a Kineto / profiler trace (JSON, plain or gzip) and sets start_us and
// dur_us on the trace's nodes (rf_id -> "Record function id", falling back to
// the older "External id" convention), GPU kernels through the launch's
// correlation id, and the iterations' durations from ProfilerStep events.
LinkStats linkKineto(Trace& trace, const std::string& kineto_path);

// Same, from the (already decompressed) text of a profiler trace; `name` is
// used in error messages. Bad JSON or no traceEvents array: InputError.
LinkStats linkKinetoText(Trace& trace, std::string text, const std::string& name);

}  // namespace etb::trace
