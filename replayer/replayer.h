// SPDX-License-Identifier: MIT
//
// The replay engine: runs the operators of one recorded iteration through the
// c10 dispatcher and measures them. et_replay's main() and the multi-rank
// tests call replayTrace(); everything else in this folder is its detail.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/trace.h"
#include "replayer/comm/communicator.h"
#include "replayer/profiler_cost.h"
#include "replayer/replay_result.h"

namespace etb::replay {

struct ReplayOptions {
  std::string device;  // "cpu", "cuda", "cuda:N"; "" = the trace's if usable
  int threads = 0;     // intra-op threads; 0 = leave libtorch's default
  int warmup = 1;
  int iters = 5;
  // After `warmup` iterations, more until the warm-up has lasted this long
  // (google/benchmark's minimum warm-up time): a sub-millisecond iteration's
  // first few hundred run up to 1.7x its steady time (lazily built state,
  // the allocator settling), so a count alone measures the transient. The
  // ranks agree on the count. Not with warmup 0 (the first iteration is
  // then the measured one).
  double min_warmup_s = 0.25;
  // More measured iterations than `iters` until they last about this long
  // (the count from the `iters` iterations' own time, at most 10,000 more
  // and 2 million op records in all, the ranks agreeing): five iterations
  // of a 0.15 ms model put its median at 0.14-0.27 ms run to run, where a
  // prediction is judged against it. 0 = `iters` only.
  double min_iters_s = 0;
  int iteration = 0;         // which recorded iteration (ProfilerStep) to replay
  std::string index_dist = "uniform";  // "uniform" or "zipf:ALPHA"
  uint64_t seed = 1234;
  // Check every replayed op's outputs (shape, dtype, strides) against the
  // recording in the first iteration; mismatches go to ReplayDiagnostics.
  bool verify_outputs = false;
  std::string original_source;  // "kineto" when the caller linked one
  // Measured original iteration times (ms); when given, the report compares
  // with these instead of the trace's or the profiler's step.
  std::vector<double> original_ms;
  // Also time iterations with the original's host time between ops (needs a
  // Kineto-linked trace); see replayer/host_time.h.
  bool emulate_host = false;
  double host_stall_us = 1000;  // eventless stretches beyond this are not host time
  // The recording's instrumentation cost per event (--original-meta's
  // "instrumentation"), used for the host time instead of this process's.
  std::optional<RecordedInstrumentation> recorded_instrumentation;
  // Serve large blocks from fresh pages so that the replay's page faults per
  // iteration come near the original's (replayer/heap_match.h).
  bool match_heap = false;
  // Run the forward's ops in grad mode over parameters that require grad, as
  // the original did, and the rest under no_grad (autograd_record.h).
  bool record_autograd = false;
  // Each iteration continues from the last one's in-place updates (the
  // parameters, optimizer state and running statistics) instead of starting
  // from the values the first one started from (Executor::keepStartState).
  bool carry_state = false;
  // Keep denormal floats (the CPU's slow path) instead of flushing them to
  // zero (setFlushDenormal): a replay's drawn values can make them where
  // the original's did not.
  bool keep_denormals = false;
  // Device time per op: after the measured iterations, this many more with
  // device events around every op call (they cost host time, so they are
  // not among the measured ones); -1 = 3 on CUDA; ignored on CPU.
  int device_op_iters = -1;
  // Probe the host's speed (host_probe.h) before each measured iteration and
  // after the last, one rank at a time (ReplayResult::speed_probe_us).
  bool speed_probe = false;
  // The original's system metrics (recorder sidecar), reported beside the
  // replay's and, per rank, in the multi-rank table.
  std::optional<OriginalSystem> original_system;
  std::vector<std::string> argv;
};

// What a verifying replay found wrong (empty when the replay is faithful).
struct ReplayDiagnostics {
  std::vector<std::string> output_mismatches;  // "node 12 aten::mm: ..."
  // Shapes that differ only because the trace was recorded on another device
  // (replayer/cpu_rewrites.h deviceDependentOutput): reported, not failures.
  std::vector<std::string> device_dependent;
  uint64_t outputs_checked = 0;
};

// Replays `trace` (already read, optionally Kineto-linked) on this rank.
// Throws InputError for a trace that cannot be replayed at all (no operators
// in the chosen iteration, bad device) and RuntimeError for failures of the
// machinery; single ops that fail are skipped and counted instead.
ReplayResult replayTrace(const trace::Trace& trace, const ReplayOptions& options,
                         Communicator& comm, ReplayDiagnostics* diag = nullptr);

// Parses "uniform" / "zipf:1.1"; throws InputError on anything else.
// Returns the Zipf exponent, 0 for uniform.
double parseIndexDist(const std::string& text);

}  // namespace etb::replay
