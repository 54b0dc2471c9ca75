// SPDX-License-Identifier: MIT
//
// The terminal report, nccl-tests / google-benchmark style: `#` header lines
// with units, then one row per op kind, skip reason, collective and rank.
#pragma once

#include <cstddef>
#include <ostream>

#include "replayer/replay_result.h"

namespace etb::replay {

// Prints the report. The op-kind table shows the `top_kinds` kinds with the
// biggest |replay - original| (or the slowest when the original is unknown)
// and sums the rest in one line. Sections with nothing to say are left out.
void printReport(const ReplayResult& result, std::ostream& os,
                 size_t top_kinds = 20);

}  // namespace etb::replay
