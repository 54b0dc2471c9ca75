// SPDX-License-Identifier: MIT
//
// et_profile_hw's measurements. Each kernel is timed the way et_replay runs
// it: a boxed call through the c10 dispatcher on tensors allocated before
// the clock starts, the median of many calls. The compute-bound shapes
// (GEMM, BMM, conv) are measured in three passes spread over a full profile,
// each point keeping its fastest median (interference only slows).
#pragma once

#include <c10/core/TensorOptions.h>

#include <functional>
#include <cstdint>
#include <string>
#include <vector>

#include "predictor/hw_profile.h"
#include "replayer/comm/communicator.h"

namespace etb::predict {

struct ProfileOptions {
  // "cpu", or "cuda"/"cuda:N": the kernel curves are then the device's time
  // (timing.h, DeviceClockScope), each op's host launch cost is kept apart
  // (HwProfile::launch_us), and the host caches' and page faults' parts
  // (first touch, retention, "@cold"/"@l3" curves) are not measured.
  std::string device = "cpu";
  int threads = 1;
  bool quick = false;
  // Progress lines ("gemm 12/40"); null = quiet.
  std::function<void(const std::string&)> progress;
};

// Measures the compute side (dispatch, GEMM, BMM, conv, memory-bound
// curves, embedding_bag, _foreach_) on this process.
void measureCompute(const ProfileOptions& options, HwProfile& profile);

// Measures collectives on `comm` (every rank must call it): busbw curves of
// all_reduce, all_gather, reduce_scatter, all_to_all and broadcast for the
// whole world, tagged with comm.backendName(). A world of one rank measures
// nothing.
void measureCollectives(const ProfileOptions& options, replay::Communicator& comm,
                        HwProfile& profile);

// The identity block for this machine and build.
HwIdentity thisMachine(const ProfileOptions& options, const replay::Communicator& comm);
// /proc/cpuinfo's model name, as HwIdentity::cpu_model records it.
std::string thisCpuModel();

// The 1-minute load average (/proc/loadavg); -1 where it cannot be read.
double loadAverage();

// Runs one part of the measurement and adds its wall time to
// profile.identity.sections_s under `name` (a part run again adds up), so a
// profile says where its minutes went.
void timedSection(HwProfile& profile, const std::string& name, const std::function<void()>& part);

// Where the profile's tensors live, and whether that is a GPU.
inline at::TensorOptions tensorsOn(const ProfileOptions& o) { return at::TensorOptions().device(o.device); }
inline bool onGpu(const ProfileOptions& o) { return o.device.rfind("cuda", 0) == 0; }

namespace detail {
// The sections of measureCompute that live in hw_bench_memory.cc.
void measureMemoryBound(const ProfileOptions& options, HwProfile& profile);
// The classes' cold curves (measureMemoryBound's "@cold") measured once more,
// after the embedding and _foreach_ sections (some 15 s later in a quick
// profile), bare like the first time, each point the geometric mean of the
// two. Bare, a pass reads the memory system as other tenants load it at that
// moment: over six quick profiles a point from 1 to 12 MiB spread 12-28%
// (log sd), against 8-14% guarded.
void measureMemoryColdAgain(const ProfileOptions& options, HwProfile& profile);  // CPU only
void measurePooling(const ProfileOptions& options, HwProfile& profile);
void measureBatchNormPlanes(const ProfileOptions& options, HwProfile& profile);  // CPU only
void measureFirstTouch(const ProfileOptions& options, HwProfile& profile);
// The first-touch cost measured once more; the profile keeps the median of
// all its measurements (after measureFirstTouch).
void measureFirstTouchAgain(const ProfileOptions& options, HwProfile& profile);
void measureRetention(const ProfileOptions& options, HwProfile& profile);  // after the cache sizes
void measureRelease(const ProfileOptions& options, HwProfile& profile);    // CPU only
void measureEpisode(const ProfileOptions& options, HwProfile& profile);    // CPU only
void measureEmbedding(const ProfileOptions& options, HwProfile& profile);
void measureForeach(const ProfileOptions& options, HwProfile& profile);
void measureReplayStep(const ProfileOptions& options, HwProfile& profile);
void measureColdAfter(const ProfileOptions& options, HwProfile& profile);
// Adds `value` to the rounds of the figure `name` (HwProfile::rounds) and
// returns the median of its rounds so far.
double addRound(HwProfile& profile, const std::string& name, double value);
// dispatch_us, view_us, the replay step and cold_after measured once more
// (CPU profiles): each the median of its rounds, from the first
// measurements (measureDispatch, measureReplayStep, measureColdAfter) on.
void measureCallCostsAgain(const ProfileOptions& options, HwProfile& profile);
void measureColdKinds(const ProfileOptions& options, HwProfile& profile);  // CPU only
// Each GEMM, BMM and conv point of `kept` takes `again`'s time where that is
// faster (the same shapes measured in a later pass, in the same order).
// Interference - another job on the core's sibling, a neighbour on the
// host - only ever slows a kernel and comes and goes over seconds: two
// profiles minutes apart disagreed by up to 2x on the same conv shapes,
// while passes spread over one profile rarely all fall in a slow stretch.
void keepFaster(HwProfile& kept, const HwProfile& again);
// The caches a profile works with: sysfs's CPU 0 figures where the kernel
// exposes them, else what glibc reads from CPUID (sysconf), whose L3 may be
// the whole package's (other cores' slices included: the retention sweep
// measures what one core keeps). Bytes; 0 where neither source knows.
struct CacheSizes {
  double l2 = 0, llc = 0;
  std::string source;  // "sysfs", "sysconf" or "" (unknown)
};
CacheSizes pickCacheSizes(const CacheSizes& sysfs, const CacheSizes& sysconf);
// What the caches keep for one core: the LLC, or the distance at which the
// measured retention already lost 90% of a buffer when that is less (a
// package-wide L3 figure from CPUID is many times what one core keeps); 0
// where neither is known.
double cacheKeepsBytes(const MemoryFacts& memory);
// The bytes a cache flush streams: twice what the caches keep, at least 16 MiB
// (a package-wide L3 would make every flush hundreds of MB).
double flushBytes(const MemoryFacts& memory);
inline std::vector<int64_t> sizesOf(const ProfileOptions& o, std::vector<int64_t> quick,
                                    std::vector<int64_t> full) {
  return o.quick ? quick : full;
}
}  // namespace detail

}  // namespace etb::predict
