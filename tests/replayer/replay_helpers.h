// SPDX-License-Identifier: MIT
//
// The replay-engine tests' one way to build small replay options and to run
// a trace on this rank alone, so that each test states only what it changes
// (iterations, verification, a flag) and the local set-up cannot drift
// between files.
#pragma once

#include <string>

#include "core/model/trace.h"
#include "replayer/replayer.h"

namespace etb::test {

// Whether the replay checks each op's outputs against the recording.
enum class Verify { kNo, kOutputs };

// Options for `iters` measured iterations after `warmup` warm-up ones on
// `device`; everything else at ReplayOptions' defaults.
replay::ReplayOptions replayOptions(int warmup, int iters, Verify verify,
                                    const std::string& device = "cpu");

// What most tests replay with: on the CPU, one warm-up, two measured
// iterations (two samples to summarise), outputs verified.
replay::ReplayOptions quickOptions();

// Replays `t` with a local communicator (one rank, as et_replay without
// mpirun); `diag`, when given, receives the verify pass's findings.
replay::ReplayResult replayLocal(const trace::Trace& t,
                                 const replay::ReplayOptions& options = quickOptions(),
                                 replay::ReplayDiagnostics* diag = nullptr);

}  // namespace etb::test
