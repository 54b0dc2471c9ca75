// SPDX-License-Identifier: MIT
//
// Shared by the composer tests: the fleet samples (read once per process),
// top-level op counts as et_replay selects them, and running the real tools.
#pragma once

#include <map>
#include <string>

#include "core/model/trace.h"

namespace etb::test {

// fleet_samples/<name>/<name>.et.json.gz, read once; ddp2 is rank 0.
const trace::Trace& fleetSample(const std::string& name);
std::string fleetPath(const std::string& name);

// Replayable ops per name over every iteration (what et_replay runs).
std::map<std::string, uint64_t> topLevelOps(const trace::Trace& t);
uint64_t topLevelCount(const trace::Trace& t);

// Runs a tool with `args` (already quoted); returns the exit status.
int runTool(const std::string& tool, const std::string& args, std::string* output);

}  // namespace etb::test
