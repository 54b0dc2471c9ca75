// SPDX-License-Identifier: MIT
//
// et_predict's engine: the time of one recorded iteration on the profiled
// machine, without running any op of the trace. The same ops et_replay
// would run (replay::selectNodes) are costed by OpModel; collectives come
// from the profile's curves; ranks meet at every collective (its start is
// the last member's arrival) and async collectives overlap the compute
// until their wait, so the critical path over ranks and streams is what
// the iteration takes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/trace.h"
#include "predictor/hw_profile.h"

namespace etb::predict {

struct PredictOptions {
  int iteration = 0;                   // ProfilerStep index, as et_replay
  std::string index_dist = "uniform";  // as et_replay's --index-dist
  std::string device = "cpu";
  int world_size = 0;  // one trace replayed by N ranks; 0 = number of traces
  // Collective backend, as et_replay --comm: "" = the one et_replay picks
  // (the trace's process groups when built in, else MPI).
  std::string comm;
  std::string profile_path = "--hw";  // named when the profile lacks curves
  // Cores the ranks share on this machine (0 = one each): more ranks than
  // cores time-slice (schedule.h), as et_replay's ranks do under mpirun on
  // fewer cores.
  int cores = 0;
  // glibc's mmap threshold in the replay process before its iterations
  // (heap_model.h); et_predict probes its own after reading the trace.
  double heap_start_bytes = 0;
  // --faults original: the original's minor faults per step (its metrics
  // sidecar), one per rank or one for all, charged as et_replay --heap
  // match gives them (heap_model.h, originalFaultBytesPerStep) instead of
  // the heap model's fresh pages; empty: the heap model.
  std::vector<double> original_faults;
  // The host's speed the CPU ops are predicted at, as the profile's guard
  // reference probe's slowdown over its fastest (HwProfile::speed_guard):
  // 0 = the profile's typical slowdown while it was measured; et_predict
  // --speed now probes this machine's present one (medianProbeUs).
  double slowdown = 0;
  std::string speed_from = "now";  // with slowdown > 0: "now" or "given" (et_predict --speed X)
};

struct OpPrediction {
  uint64_t node_id = 0;
  std::string name;
  std::string family;  // model family, "comm", "skipped"
  double us = 0;       // own time (a collective: its transfer time)
  double start_us = 0; // offset in the iteration, on its rank
  double first_touch_us = 0;  // part of `us`: fresh pages its outputs fault in
  double fresh_pages = 0;     // those pages
  double release_us = 0;      // part of `us`: pages the step hands back to the OS
  double episode_us = 0;      // part of `us`: faulting them in amid other work (episodeExtraUs)
  double cold_code_us = 0;    // in `us` (before the speed scale): its code out of the caches
  double dram_share = 0, l3_share = 0;  // of its input bytes (reuse_model.h)
  // GPU profiles: the op's kernels on the device and its launch on the host
  // (et_replay's own step included); `us` is then what the op added to the
  // later of the two clocks. -1 on a CPU.
  double device_us = -1, launch_us = -1;
};

struct RankPrediction {
  int rank = 0;
  double iter_us = 0;
  double compute_us = 0;        // sum of op times
  double comm_us = 0;           // sum of collective transfer times
  double exposed_comm_us = 0;   // time blocked on communication
  double host_us = -1;          // recorded host gaps (profiler linked), else -1
  double device_us = -1;        // GPU: the device's busy time (sum of kernels), else -1
  std::vector<OpPrediction> ops;
};

struct KindPrediction {
  uint64_t count = 0;
  double us = 0;
  std::string family;
};

struct Prediction {
  double iter_ms = 0;            // slowest rank, ops as et_replay runs them
  std::string comm_backend;      // whose collective curves were read
  double iter_with_host_ms = -1; // plus the recorded host gaps, when known
  std::vector<RankPrediction> ranks;
  std::map<std::string, KindPrediction> kinds;  // rank 0, by op name
  uint64_t ops = 0, modelled = 0, fallback = 0, skipped = 0, comms = 0;
  // Of the comms, those the trace counts but cannot size (no comm info:
  // torch 1.13's bare gloo:all_to_all); et_replay skips them, they take 0 here.
  uint64_t comms_unsized = 0;
  // Collectives' group sizes the profile has no curves of: each read from
  // the measured group size it maps to, scaled by the ring factor.
  std::map<int, int> comm_groups_scaled;
  std::map<std::string, uint64_t> skipped_by_reason;
  uint64_t aten_calls = 0;  // ATen ops that ran while predicting (must be 0)
  double heap_start_bytes = 0;  // PredictOptions::heap_start_bytes, as used
  std::string faults_from = "heap model";  // or "original" (PredictOptions::original_faults)
  // The slowdown the CPU ops were predicted at, and whose it was: "profile"
  // (its typical one), "now" or "given" (PredictOptions::slowdown).
  double slowdown = 1, profile_slowdown = 1;  // the latter: HwProfile::speed_guard's
  std::string speed_from = "profile";
};

// Predicts one iteration of `traces` (one per rank, or one for every rank
// when options.world_size > 1). Throws InputError for traces that cannot be
// predicted (no ops in the iteration, collectives that never match) and
// for a multi-rank set with collectives when the profile has no curves of
// the backend they would be replayed on (naming options.profile_path).
Prediction predictIteration(const std::vector<const trace::Trace*>& traces,
                            const HwProfile& profile, const PredictOptions& options);

}  // namespace etb::predict
