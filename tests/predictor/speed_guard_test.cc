// SPDX-License-Identifier: MIT
// The profile's guard against a machine that slows down under a measurement
// (timing.h, SpeedGuardScope). A slow spell is staged by making both the
// reference probe and the measured call spin twice as long while it lasts:
// the work a neighbour on the core would slow, without the neighbour.
#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"
#include "predictor/hw_profile.h"
#include "predictor/timing.h"
#include "replayer/timer.h"
#include "tests/predictor/profile_test_util.h"

namespace etb::predict {
namespace {

void spin(double us) {
  const double until = replay::nowUs() + us;
  while (replay::nowUs() < until) {
  }
}

// A spell in wall time: 60 ms from the first measurement on. The first try
// (about 4 ms) runs in it; a retry without a pause, or after no more than
// the 30 ms first pause, would too; the guard's doubled second pause ends
// past it (30 + 60 ms). Unguarded, the same spell doubles the median.
TEST(SpeedGuard, AMeasurementIsTakenAgainOnceASlowSpellHasPassed) {
  double spell_end = 0;
  const auto slowed = [&](double us) { spin(replay::nowUs() < spell_end ? 2 * us : us); };
  const auto call = [&] { slowed(200); };
  double guarded = 0;
  SpeedGuardStats stats;
  {
    const SpeedGuardScope guard(1.0, [&] { slowed(20); });
    spell_end = replay::nowUs() + 60e3;
    guarded = medianCallUs(call, true);
    stats = speedGuardStats();
    // Two more measurements with no spell: the median probe is then an
    // unslowed one, the mean (2 x 2 + 4 x 1) / 6 of the fastest.
    medianCallUs(call, true);
    medianCallUs(call, true);
    const SpeedGuardStats three = speedGuardStats();
    EXPECT_NEAR(three.slowdown, 1, 0.1);
    EXPECT_NEAR(three.mean_slowdown, 4.0 / 3, 0.15);
  }
  spell_end = replay::nowUs() + 60e3;
  const double unguarded = medianCallUs(call, true);
  EXPECT_NEAR(guarded, 200, 40);
  EXPECT_NEAR(unguarded, 400, 80) << "the staged spell did not slow the call";
  EXPECT_EQ(stats.measurements, 1);
  EXPECT_DOUBLE_EQ(stats.retried_share, 1);
  EXPECT_DOUBLE_EQ(stats.kept_disturbed_share, 0);
  EXPECT_NEAR(stats.slowdown, 2, 0.3);    // the first try's probes, both in the spell
  EXPECT_NEAR(stats.mean_slowdown, 2, 0.3);
  EXPECT_GT(stats.retry_s, 0.09);         // both pauses
  EXPECT_EQ(speedGuardStats().measurements, 0) << "the scope's figures outlived it";
}

// A spell that starts and ends inside one measurement of long calls: the
// probes before and after it run at full speed, the ones between its calls
// do not. Counted in calls, not time: the 4th to 6th calls of 2 ms (and the
// probes while they run) take twice as long; the five timed calls are the
// 3rd to 7th, so their median is a slowed one unless the try is taken again.
TEST(SpeedGuard, ASpellInsideALongMeasurementIsSeenBetweenItsCalls) {
  int calls = 0;
  bool staged = true;
  const auto in_spell = [&] { return staged && calls >= 4 && calls < 7; };
  const auto call = [&] {
    ++calls;
    spin(in_spell() ? 4000 : 2000);
  };
  const SpeedGuardScope guard(1.0, [&] { spin(in_spell() ? 40 : 20); });
  const double us = medianCallUs(call, true);
  EXPECT_NEAR(us, 2000, 300);
  EXPECT_DOUBLE_EQ(speedGuardStats().retried_share, 1);
  EXPECT_GT(calls, 7) << "not measured again";
}

// A machine slowed 1.5x from the first measurement on and through every
// retry: the guard keeps a slowed try, and its samples are brought to the
// fastest probe's speed (the predictor multiplies the typical slowdown back
// in; left in the curves too, it was counted twice). Without the division the
// median is 300 us, the slowed call's time.
TEST(SpeedGuard, AMachineSlowedThroughEveryTryIsMeasuredAtItsFastestProbesSpeed) {
  bool slow = false;
  const auto slowed = [&](double us) { spin(slow ? 1.5 * us : us); };
  const SpeedGuardScope guard(1.0, [&] { slowed(20); });
  slow = true;
  const double us = medianCallUs([&] { slowed(200); }, true);
  const SpeedGuardStats stats = speedGuardStats();
  EXPECT_NEAR(us, 200, 25);
  EXPECT_DOUBLE_EQ(stats.kept_disturbed_share, 1);
  EXPECT_NEAR(stats.kept_slowdown, 1.5, 0.15);
  EXPECT_NEAR(stats.slowdown, 1.5, 0.15);
}

// A measurement at full speed is left as it was: its kept probes came out at
// the fastest, and nothing is divided.
TEST(SpeedGuard, AnUnslowedMeasurementIsLeftAsMeasured) {
  const SpeedGuardScope guard(1.0, [&] { spin(20); });
  const double us = medianCallUs([&] { spin(200); }, true);
  EXPECT_NEAR(us, 200, 25);
  EXPECT_NEAR(speedGuardStats().kept_slowdown, 1, 0.1);
}

// Without a scope a measurement runs once, as it always did.
TEST(SpeedGuard, WithoutAScopeNothingIsProbedOrRetried) {
  int runs = 0;
  const std::vector<double> s = guardedSamples([&] {
    ++runs;
    return std::vector<double>{1, 2, 3};
  });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(speedGuardStats().measurements, 0);
}

// Inside an UnguardedScope, under a live guard, a measurement runs as the
// machine runs: the same 1.5x slowdown as above stays in its median (a
// guarded one is brought to 200 us), nothing is probed between its calls or
// retried, and it does not count among the guard's measurements. Nested
// scopes: the inner one's end leaves the outer in force.
TEST(SpeedGuard, AnUnguardedMeasurementKeepsTheSlowdownAndIsNotRetried) {
  bool slow = false;
  int probes = 0;
  const auto slowed = [&](double us) { spin(slow ? 1.5 * us : us); };
  const SpeedGuardScope guard(1.0, [&] {
    ++probes;
    slowed(20);
  });
  slow = true;
  double us = 0;
  int runs = 0;
  {
    const UnguardedScope outer;
    { const UnguardedScope inner; }
    const int probes_before = probes;
    us = medianCallUs([&] { slowed(2000); }, true);  // long calls: probed between them when guarded
    guardedSamples([&] {
      ++runs;
      return std::vector<double>{1};
    });
    EXPECT_EQ(probes, probes_before) << "probed inside the scope";
  }
  EXPECT_NEAR(us, 3000, 300);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(speedGuardStats().measurements, 0);
  // The scope gone, the guard is back: the same call is brought to 2000 us.
  EXPECT_NEAR(medianCallUs([&] { slowed(2000); }, true), 2000, 250);
  EXPECT_EQ(speedGuardStats().measurements, 1);
}

// The profile keeps the guard's figures and refuses a slowdown below 1.
TEST(SpeedGuard, AProfileRoundTripsItsSpeedFacts) {
  HwProfile hw;
  hw.dispatch_us = 0.5;
  hw.bandwidth["unary"] = {{1e3, 1}, {1e6, 100}};
  hw.speed_guard = {1042, 72.5, 0.11, 0.02, 1.08, 12.5, 1.14, 1.03};
  const HwProfile back = profileFromJson(profileToJson(hw), "hand.json");
  EXPECT_EQ(back.speed_guard.measurements, 1042);
  EXPECT_DOUBLE_EQ(back.speed_guard.probe_us, 72.5);
  EXPECT_DOUBLE_EQ(back.speed_guard.retried_share, 0.11);
  EXPECT_DOUBLE_EQ(back.speed_guard.kept_disturbed_share, 0.02);
  EXPECT_DOUBLE_EQ(back.speed_guard.slowdown, 1.08);
  EXPECT_DOUBLE_EQ(back.speed_guard.retry_s, 12.5);
  EXPECT_DOUBLE_EQ(back.speed_guard.mean_slowdown, 1.14);
  EXPECT_DOUBLE_EQ(back.speed_guard.kept_slowdown, 1.03);
  hw.speed_guard.slowdown = 0.9;
  expectRefusedNaming(hw, "speed_guard.slowdown");
  hw.speed_guard.slowdown = 1.08;
  hw.speed_guard.kept_slowdown = 0.5;
  expectRefusedNaming(hw, "speed_guard.kept_slowdown");
  hw.speed_guard = {};
  EXPECT_EQ(profileToJson(hw).find("speed_guard"), std::string::npos) << "written for a profile without one";
}

}  // namespace
}  // namespace etb::predict
