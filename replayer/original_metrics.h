// SPDX-License-Identifier: MIT
//
// The recorder's metrics sidecar (fleet_samples/metrics.py writes it): the
// original's CPU utilisation, peak RSS, threads and, on a GPU, NVML figures
// and Kineto's device properties, so reports can put them beside the
// replay's own SystemMetrics.
#pragma once

#include <optional>
#include <string>

#include "replayer/replay_result.h"

namespace etb::replay {

// Reads a sidecar ({"schema": "etbench.metrics/1", "cpu_util_pct": ...}).
// A missing file, bad JSON or a field of the wrong type: InputError naming
// the file and the field.
OriginalSystem readOriginalMetrics(const std::string& path);

// The same for a sidecar's text (a generated program carries it embedded);
// `path` names it in errors and in the report.
OriginalSystem parseOriginalMetrics(const std::string& text, const std::string& path);

// "<stem>.metrics.json" beside `trace_path` (stem: the name less .gz, .json,
// .et, .pb), or "" when there is none.
std::string metricsBesideTrace(const std::string& trace_path);

}  // namespace etb::replay
