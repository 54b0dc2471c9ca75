// SPDX-License-Identifier: MIT
//
// The host-speed probe that et_profile_hw's guard and et_replay --speed-probe
// share: four 64x64 mm's in L1, the faster of two rounds. On a shared VM the
// host's speed moves 1.3-1.8x within seconds (2026-12-03: lstm's iterations
// 32-36 ms, then 23-27 in the same process); the probe next to an iteration
// tracks it (corr 0.92 with lstm's steps, probes 3 ms on either side), one
// taken seconds before does not. Host timing, CPU only.
#pragma once

#include <functional>

namespace etb::replay {

// How far over the fastest probe a reading counts as the host slowed:
// et_profile_hw's guard measures again beyond it, and et_replay's report
// counts the iterations within it.
inline constexpr double kDisturbedRatio = 1.2;

// The reference work: four 64x64 mm_out's on tensors it owns.
std::function<void()> guardReference();

// One probe of `reference`: the faster of two rounds, microseconds (an
// interrupt is not a spell).
double bestOfTwoUs(const std::function<void()>& reference);

// The median of `probes` probes of the default reference, back to back:
// the host's speed now, against a profile's speed_guard.probe_us.
double hostProbeUs(int probes = 5);

}  // namespace etb::replay
