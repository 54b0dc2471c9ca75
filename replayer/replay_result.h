// SPDX-License-Identifier: MIT
//
// What a replay measured: the contract between the replay engine (which
// fills it), the communication layer (which adds per-rank and per-collective
// figures), and the reporters (terminal table, JSON, HTML, Chrome trace).
// Times are milliseconds for iterations and microseconds for ops.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "replayer/heap_match.h"

namespace etb::replay {

// Summary of a set of samples (see summarize()).
struct Distribution {
  std::vector<double> samples;
  double min = 0, max = 0, mean = 0, median = 0, p90 = 0, stddev = 0;
};
Distribution summarize(std::vector<double> samples);
// The median alone (the mean of the two middle samples for an even count); 0 when empty.
double medianOf(std::vector<double> samples);

struct SkippedOp {
  uint64_t node_id = 0;
  std::string name;
  std::string reason;
};

struct Coverage {
  uint64_t operators = 0;  // selected compute operators in the iteration
  uint64_t replayed = 0;   // of those, run through the dispatcher
  uint64_t skipped = 0;    // operators - replayed
  std::map<std::string, uint64_t> skipped_by_reason;
  std::vector<SkippedOp> skipped_ops;  // every skipped op, in trace order
  // Replayed, but not as recorded (each listed with why, in trace order):
  // computed in float32 and cast back because this libtorch has no kernel
  // for the recorded Half/BFloat16 on this device; or nothing to do on this
  // device (record_stream on CPU).
  uint64_t fallback_fp32 = 0;
  std::vector<SkippedOp> fallback_ops;
  uint64_t noop = 0;
  std::vector<SkippedOp> noop_ops;
  // Replayed with inputs or outputs the recording could not give exactly
  // (each listed once with what was done): a data-dependent output shape
  // pinned to the recorded one, indices clamped into their table after an
  // out-of-range fault (a scalar's value is not recorded).
  uint64_t adapted = 0;
  std::vector<SkippedOp> adapted_ops;
  uint64_t comms = 0;           // communication nodes selected
  uint64_t comms_replayed = 0;  // of those, run by the communicator
  // Leaf tensors laid out as non-contiguous views of their storage: recorded
  // strides, or (traces without strides) those of the view op that made them.
  uint64_t strided_leaves = 0;
  // Ops whose outputs held NaN where all their inputs were finite, in the first
  // iteration (each listed once; empty and resize_, whose outputs are
  // uninitialised, aside): made-up values the kernel cannot take
  // (the log of a negative), or leaves that alias what they should not.
  // Kernels with data-dependent paths (max_pool2d, sorts) time otherwise on
  // NaN, and every op after such an output computes on NaN.
  uint64_t nan_outputs = 0;
  std::vector<SkippedOp> nan_ops;
  // --autograd record: forward ops run in grad mode over parameters that
  // require grad (-1: recording off); why none were, when none were.
  int64_t autograd_forward_ops = -1;
  uint64_t autograd_parameters = 0;
  std::string autograd_none;
};

// One selected op: its replay time per measured iteration and the original.
struct OpStat {
  uint64_t node_id = 0;
  std::string name;     // "aten::mm"
  std::string overload; // "out", "" for the default overload
  bool replayed = false;
  bool is_comm = false;
  double replay_us = 0;     // median over measured iterations
  double original_us = -1;  // from Kineto / trace timings; -1 unknown
  double start_us = 0;      // offset within the last measured iteration
  // Device time (GPU): the replay's, median over the device-timed
  // iterations (CUDA events around the call; -1 not timed: CPU, skipped
  // ops, collectives); the original's, its linked kernels and those of the
  // ops below it, each once (-1 none linked).
  double device_us = -1;
  double original_device_us = -1;
  // Minor page faults of the step (its call and the frees after it), median
  // over the warm-up iterations after the first (the heap has settled by
  // then and those iterations are not timed); -1 not counted (warm-up < 2).
  double minor_faults = -1;
};

// Per operator name ("op kind"), summed over one iteration.
struct KindStat {
  std::string name;
  uint64_t count = 0;
  double replay_us = 0;
  double original_us = -1;
  double device_us = -1;           // sums of the ops' (-1: none has one)
  double original_device_us = -1;
};

// Device busy time per iteration next to the iteration times: the sums of
// kernel times, not the span the device was busy.
struct DeviceTime {
  // The original's linked kernels of the replayed iteration, all of them and
  // those under the selected ops (the per-op column's sum); collectives'
  // kernels separately (the replay times collectives on the host). -1 unknown.
  double original_ms = -1;
  double original_ops_ms = -1;
  double original_comm_ms = -1;
  // The replay's: iterations run after the measured ones with CUDA events
  // around every op call (0: not timed), and the sum of the per-op medians.
  int iters = 0;
  double replay_ms = -1;
  uint64_t timed_ops = 0;        // ops with a device time
  uint64_t host_synced_ops = 0;  // of those, calls that waited for the device themselves
  uint64_t events_per_iter = 0;
  Distribution timed_iter_ms;    // those iterations' wall times (events included)
};

// Per collective type and message size, nccl-tests definitions.
struct CollectiveStat {
  std::string type;     // "all_reduce"
  std::string group;    // process group name
  uint64_t bytes = 0;   // per-rank message size
  uint64_t count = 0;   // calls per iteration
  double time_us = 0;   // median per call
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

// System figures for one rank over the measured iterations.
struct SystemMetrics {
  double cpu_util_pct = -1;     // process CPU time / wall time, all cores
  uint64_t peak_rss_bytes = 0;
  uint64_t peak_tensor_bytes = 0;  // peak bytes held by replay tensors
  // Page faults served without I/O (first touch of memory the heap got
  // from, or gave back to, the kernel) per measured iteration; -1 unknown.
  double minor_faults_per_iter = -1;
  // GPU (NVML); absent where there is no GPU.
  std::optional<double> gpu_util_pct;
  std::optional<uint64_t> gpu_mem_bytes;
  std::optional<double> gpu_power_w;
};

// The original's side of SystemMetrics, from the recorder's metrics sidecar
// (<stem>.metrics.json beside the trace, or --original-metrics FILE).
struct OriginalSystem {
  SystemMetrics metrics;        // peak_tensor_bytes stays 0 (not recorded)
  int threads = -1;             // intra-op threads of the original
  int os_threads = -1;          // threads of the recording process
  std::string source;           // the sidecar's path
  std::string window;           // what the figures cover
  bool same_process = true;     // measured in the process that wrote the trace
  std::string device_properties;  // Kineto's deviceProperties (JSON), "" if none
};

// Host-overhead emulation (--host-time emulate): the original's CPU time
// between its top-level ops, from the profiler file less the recording's
// instrumentation, replayed as busy waits around the ops.
struct HostTime {
  Distribution with_host_iter_ms;  // iterations with the host time inserted
  double emulated_ms = 0;          // host time inserted per iteration
  double original_host_ms = 0;     // the original's, before taking out the replay's own
  double replay_between_ms = 0;    // the replay's own time between ops (ops-only iterations)
  double recorded_gap_ms = 0;      // the same gaps as profiled
  double profiler_event_us = 0;    // instrumentation cost per operator event
  double profiler_label_us = 0;    // per label event (autograd engine, record_function)
  double profiler_gap_us = 0;      // of an operator's, what lies between two ops
  // Where the three figures above come from: "here" (measured by this
  // process) or "recording" (the recording process's, meta.json).
  std::string profiler_cost_from = "here";
  uint64_t gaps = 0;               // gaps that kept some host time
  uint64_t boundaries = 0;         // instrumented event starts/ends in gaps
  uint64_t label_boundaries = 0;   // of them, of label events
  uint64_t untimed_ops = 0;        // selected ops without a profiler time
  uint64_t stalls = 0;             // eventless stretches longer than the stall limit
  double stalled_ms = 0;           // their length, dropped from the gaps
  double stall_limit_us = 0;       // the limit (--host-stall-us)
};

struct RankResult {
  int rank = 0;
  std::string host;
  Distribution iter_ms;
  double comm_ms = 0;          // per iteration, median
  double exposed_comm_ms = 0;  // per iteration, median
  uint64_t comm_bytes = 0;     // per iteration
  double original_ms = -1;     // this rank's original (median), -1 unknown
  double with_host_ms = -1;    // with host time emulated (median), -1 not emulated
  SystemMetrics system;
  // This rank's original (its own metrics sidecar); cpu -1 / rss 0: none.
  double original_cpu_util_pct = -1;
  uint64_t original_peak_rss_bytes = 0;
  // This rank's coverage (each rank replays its own trace): rank 0's report
  // is the only one written, so another rank's skips show only here.
  uint64_t operators = 0, replayed = 0, comms = 0, comms_replayed = 0;
};

// An event of the replay timeline (last measured iteration), for the Chrome
// trace. `tid` separates compute (0) and communication (1) lanes.
struct TimelineEvent {
  std::string name;
  std::string category;  // "op", "comm", "skipped", "iteration"
  uint64_t node_id = 0;
  int rank = 0;
  int tid = 0;
  double start_us = 0;
  double dur_us = 0;
};

struct ReplayResult {
  // What was run, where.
  std::vector<std::string> argv;
  std::string trace_path;
  std::string schema;
  std::string device;  // "cpu", "cuda:0"
  int threads = 1;
  int warmup = 0;           // warm-up iterations run (with those --min-warmup-s added)
  double warmup_ms = 0;     // and their wall time
  int iters = 0;
  // "reset": each iteration started from the first one's leaf values;
  // "carry": from the last one's updates (--state).
  std::string state = "reset";
  int64_t state_reset_bytes = 0;  // drawn again before each iteration
  // "flush": denormal floats computed as zero on the CPU; "keep" (--denormals).
  std::string denormals = "flush";
  int world_size = 1;
  std::string host;
  std::string etbench_version;
  std::string torch_version;
  std::string comm_backend;  // "local", "mpi", "gloo", "nccl"

  Coverage coverage;
  Distribution replay_iter_ms;                 // rank 0 (or the only rank)
  std::optional<Distribution> original_iter_ms;
  std::string original_source;  // "kineto", "trace", "" when unknown

  // --speed-probe: per measured iteration (replay_iter_ms.samples' order),
  // the slower of the host probes before and after it over every rank,
  // microseconds (host_probe.h); empty without.
  std::vector<double> speed_probe_us;

  std::vector<OpStat> ops;     // selected ops in trace order
  std::vector<KindStat> kinds; // sorted by |replay - original|, biggest first
  std::vector<CollectiveStat> collectives;
  std::vector<RankResult> ranks;  // one per rank, gathered on rank 0
  SystemMetrics system;           // this rank
  std::optional<OriginalSystem> original_system;
  std::optional<HostTime> host_time;
  std::optional<HeapMatch> heap;  // --heap match
  std::optional<DeviceTime> device_time;  // when either side has device times
  std::vector<TimelineEvent> timeline;
};

}  // namespace etb::replay
