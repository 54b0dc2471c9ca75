// SPDX-License-Identifier: MIT
//
// How et_profile_hw times one kernel: two warm-up calls, then calls until a
// time budget is spent (at least 5), each timed on its own; the median is
// robust to the odd preempted call on a shared machine.
#pragma once

#include <ATen/core/ivalue.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "replayer/host_probe.h"

namespace etb::predict {

// While one is alive (et_profile_hw --device cuda), medianCallUs and the
// timeOp calls time the device work of the calls, not the host's: batches of
// calls launched while the stream is held (DeviceSync's gate), the events
// around a batch divided by its calls, so a kernel's time is the device
// running it back to back, not the device waiting for launches. Each timed
// call's host time (what launching it cost) is kept by name for the
// profile's launch table. One per process, on the measuring thread.
class DeviceClockScope {
 public:
  // `device`: "cuda" or "cuda:N" (replay::makeDeviceSync).
  explicit DeviceClockScope(const std::string& device);
  ~DeviceClockScope();
  DeviceClockScope(const DeviceClockScope&) = delete;
  DeviceClockScope& operator=(const DeviceClockScope&) = delete;
};

// The median host microseconds per call of each op timed under a
// DeviceClockScope, by the name the call was timed under ("aten::mm").
std::map<std::string, double> launchHostUs();
// The median over the ops timed under a DeviceClockScope of one call on an
// idle device, launched and synchronised, less its launch and its kernel:
// how long the host waits beyond the device's work (0 with none timed).
double syncLatencyUs();
// The ops timed under a DeviceClockScope that wait for the device inside
// the call (their curves hold host-timed, synchronised calls), by name.
std::vector<std::string> synchronisingOps();
// The median over the op names timed under a DeviceClockScope of a launch
// right after a round of other kinds of ops (a GEMM, reductions, softmax,
// a loss, a convolution, indexing, ...) over its hot-loop launch: what a
// replay's first call of a kind in an iteration costs, its code and data
// gone from the host's caches (0 with none timed).
double launchFirstScale();
// Host timing: the median over the short ops timed by name (medianCallUs
// with a name, under 200 us) of a call right after a round of sixteen other
// kinds of ops less its hot-loop call: what a replayed CPU call costs
// beyond its curve when the op before it was of another kind (its code and
// the dispatcher's data for it out of the core's caches); 0 with none
// timed. resetCallCold() starts probing (a new profile) and callColdUs()
// ends it.
double callColdUs();
void resetCallCold();

// A call at least this long is warmed up once and timed three times (a
// gigabyte gradient zero-filled and faulted in takes seconds per call, and
// varies little from call to call); shorter ones twice and at least five.
inline constexpr double kLongCallUs = 1e6;
// The same from a tenth of a second in a quick profile: on a VM with 11 us
// page faults a 64 MiB output costs 190 ms of first touches a call (the
// largest memory-bound size took 82 s of a 247 s quick profile), and a
// million-row embedding gradient about 750 (65,536 pages).
inline constexpr double kQuickLongCallUs = 1e5;
inline double longCallUs(bool quick, double long_call_us) {
  return quick ? std::min(long_call_us, kQuickLongCallUs) : long_call_us;
}

// Median microseconds of one call of `fn`. `quick` spends ~4 ms per kernel
// instead of ~25 ms. Adds its timed calls to the stall tally.
// `name` keys the call's host time in launchHostUs() (device timing only).
double medianCallUs(const std::function<void()>& fn, bool quick, double long_call_us = kLongCallUs,
                    const std::string& name = "");

// A shared machine slows down under a measurement: on a 2-vCPU VM another
// tenant slowed compute 1.5-1.9x for 0.1 s to seconds at a time, 30-40% of
// the time on a busy morning (a 256x1024x1024 mm: 16.7 ms, 27-32 disturbed),
// and a GEMM sweep measured through such spells predicted an MLP 65% slow.
// While a SpeedGuardScope lives (and no UnguardedScope, below), every
// medianCallUs and coldCallUs measurement is bracketed by a reference probe
// (`reference`, by default four 64x64 mm's in L1, ~75 us, the faster of two
// rounds; long ones are probed between their calls too); one whose probes ran over
// kDisturbedRatio of the fastest probe seen is measured again after a pause
// (kGuardPauseUs, doubling with each try; at most kGuardRetries times,
// retries and pauses at most `retry_budget` of the first tries' time and
// kGuardAllowanceUs), the try with the fastest probes kept. The kept try's
// samples are divided by its probes' mean over the fastest probe (when over
// 1): every measurement comes out at the fastest probe's speed, slowed or
// not. Not nested; host timing only.
using replay::kDisturbedRatio;  // host_probe.h
inline constexpr int kGuardRetries = 5;
inline constexpr double kGuardPauseUs = 30e3;
inline constexpr double kGuardAllowanceUs = 2e6;
class SpeedGuardScope {
 public:
  explicit SpeedGuardScope(double retry_budget, std::function<void()> reference = {});
  ~SpeedGuardScope();
  SpeedGuardScope(const SpeedGuardScope&) = delete;
  SpeedGuardScope& operator=(const SpeedGuardScope&) = delete;
};
struct SpeedGuardStats {
  int measurements = 0;      // guarded measurements
  double probe_us = 0;       // the fastest probe
  double retried_share = 0;  // measurements whose first try was disturbed
  double kept_disturbed_share = 0;  // ... and all of whose tries were
  double slowdown = 1;       // first tries' probes: median over the fastest
  double mean_slowdown = 1;  // ... and their mean
  double retry_s = 0;        // seconds in retries and the pauses before them
  double kept_slowdown = 1;  // the kept tries' mean probes over the fastest: median, at least 1
};
// The live scope's figures so far (all zero / 1 without one).
SpeedGuardStats speedGuardStats();
// `measure`'s samples, guarded when a scope lives (the kept try's).
std::vector<double> guardedSamples(const std::function<std::vector<double>()>& measure);
// Inside a guarded measurement, a probe between its calls (each cold call's,
// each call of at least kCheckpointCallUs): a spell that starts and ends
// within a long measurement slows the try too. Nothing otherwise.
void speedGuardCheckpoint();
inline constexpr double kCheckpointCallUs = 1000;

// While one lives (nested or not), guardedSamples and speedGuardCheckpoint
// run the measurement bare: no probes, no retries, no scaling, as the
// machine runs. For kernels bound by the caches and DRAM: the guard's probe
// is a GEMM in L1, which another tenant's memory traffic does not slow, so
// its retries kept the moments the memory system was quiet too, and its
// scaling divided out the probe's own slowdown after each flush. Guarded,
// a quick profile read a cold 16 MiB zero_ at 918 us and a 64 MiB one at
// 3,098 us; bare, in the same minute, 1,187 and 4,655 us; a replay of dlrm
// zeroed its 25.6 MB gradient in 2,260 us.
class UnguardedScope {
 public:
  UnguardedScope();
  ~UnguardedScope();
  UnguardedScope(const UnguardedScope&) = delete;
  UnguardedScope& operator=(const UnguardedScope&) = delete;
};

// The guard's default reference probed for `seconds`, probes 5 ms apart
// (as the guard opens): their median, microseconds. Against a profile's
// SpeedGuardStats::probe_us, the machine's slowdown now, as `slowdown` was
// its typical one while profiling. Host timing; no guard needed.
double medianProbeUs(double seconds);

// The tally over every medianCallUs loop since the last reset: the share of
// the calls' total time beyond n x median (0 with nothing timed).
void resetStallTally();
double stallShare();
// The tally by the loops' median call: loops whose median is at most
// `up_to_us` (and above the bin before) leave out `share` of their
// `total_us`. Short calls lose more to a slow one than long calls do: on a
// 2-vCPU VM a replayed MobileNet's calls of under 3 us averaged 14% above
// their medians, of 30-100 us 5%, while the whole profile's share read
// 1.4% (its time is the long GEMMs' and convolutions').
constexpr std::array<double, 7> kStallBinsUs = {3, 10, 30, 100, 300, 1000, 1e9};
struct StallBin {
  double up_to_us = 0, share = 0, total_us = 0;
};
std::vector<StallBin> stallShareByCall();  // the bins with calls in them

// Median microseconds of `fn` with the caches emptied before each call
// (`flush`, untimed): how a kernel runs on data that comes from DRAM.
// A fixed number of calls (each flush costs milliseconds: coldCallSamples),
// three for a long call; one untimed call first.
inline int coldCallSamples(bool quick) { return quick ? 5 : 15; }
double coldCallUs(const std::function<void()>& fn, const std::function<void()>& flush, bool quick,
                  double long_call_us = kLongCallUs);

// One boxed call of aten::`name`.`overload` on a copy of `args`, the way
// et_replay calls an op, timed by medianCallUs; `key` names its launch in
// launchHostUs() ("" = `name`).
double timeOp(const char* name, const char* overload, const std::vector<c10::IValue>& args,
              bool quick, const std::string& key = "");

// The median of `xs` (the upper one of an even count), as every timed loop
// here takes it.
double medianOf(std::vector<double> xs);

}  // namespace etb::predict
