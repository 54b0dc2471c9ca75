// SPDX-License-Identifier: MIT
//
// The original a replay is compared with, when the caller measured it
// rather than profiled it: a profiled step carries the profiler's own cost
// (the fleet samples' profiled steps run 1.5-8x their plain steps), so
// comparing a replay with it reads as the replay being far too fast.
#pragma once

#include <string>

#include "replayer/replayer.h"

namespace etb::replay {

// --original-ms: times the user measured (ms, each > 0); source "user".
void useMeasuredOriginal(const std::vector<double>& iter_ms, ReplayOptions& options);

// --original-meta: a fleet sample's meta.json ("original": {"iter_ms": [...]}
// or {"iter_ms_median": x}, the unprofiled steps; "threads": n). Sets the
// original and, when options.threads is 0, the threads it was recorded with.
// A multi-rank sample's meta.json ("ranks": {"<R>": {"original": ...}})
// gives each rank its own steps. Its "instrumentation" (the recording's cost
// per operator and label event, fleet_samples/record.py) goes to
// options.recorded_instrumentation. A missing or malformed field is an
// InputError naming the file.
void useOriginalMeta(const std::string& meta_path, ReplayOptions& options, int rank = 0);

}  // namespace etb::replay
