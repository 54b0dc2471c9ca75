// SPDX-License-Identifier: MIT
//
// The one interface the replayer talks to for communication. Backends
// (local, MPI, NCCL) live beside this file; nothing outside replayer/comm/
// names MPI or NCCL.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "core/model/trace.h"
#include "replayer/replay_result.h"

namespace etb::replay {

// Totals a backend keeps while replaying (reset per measured iteration by
// the caller through resetStats()).
struct CommStats {
  uint64_t calls = 0;
  uint64_t bytes = 0;        // payload bytes this rank sent/received
  double busy_us = 0;        // time inside collectives (incl. waits)
  double exposed_us = 0;     // time the host was blocked on communication
};

// A posted operation; wait() blocks until it is complete.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
};

// One communication node of the trace, with the replay tensors bound to its
// recorded inputs and outputs (either may be empty: the backend then sizes
// buffers from CommInfo).
struct CommCall {
  const trace::Trace* trace = nullptr;
  const trace::Node* node = nullptr;
  const trace::CommInfo* info = nullptr;
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  virtual std::string backendName() const = 0;
  // The communication library's own version line ("Open MPI v4.1.4, ..."),
  // "" for backends without one. Recorded in hardware profiles.
  virtual std::string libraryVersion() const { return ""; }

  // Called once per trace before replay: creates sub-communicators for the
  // trace's process groups and checks that all ranks agree on the sequence
  // of collectives (throws InputError naming the first mismatch).
  virtual void prepare(const trace::Trace& trace) = 0;

  // Runs a collective / p2p call. Async calls return a Work that a later
  // `wait` node completes; synchronous ones return nullptr when done.
  virtual std::shared_ptr<Work> run(CommCall& call) = 0;

  virtual void barrier() = 0;
  // A barrier for a long wait: the caller sleeps between polls instead of
  // spinning, so a rank that waits leaves its core to ranks sharing it
  // (et_profile_hw's ranks while rank 0 measures kernels, the replay's while
  // one rank calibrates the host-time emulation).
  virtual void sleepingBarrier() { barrier(); }
  virtual CommStats stats() const = 0;
  virtual void resetStats() = 0;

  // Gathers one string per rank on rank 0 (in rank order); other ranks get
  // an empty vector. Used to collect per-rank results for the report.
  virtual std::vector<std::string> gatherToRoot(const std::string& mine) = 0;
  // The largest of every rank's `mine`, on every rank: how ranks agree on a
  // count each works out from its own clock (the replay's warm-up).
  virtual double maxOverRanks(double mine) = 0;

  // Ends the whole job now (every rank), after printing `message` with this
  // rank. Used when a rank fails so that no other rank hangs.
  [[noreturn]] virtual void abortJob(const std::string& message, int code) = 0;

  // Per collective type, group and message size: calls per iteration (the
  // iterations being the resetStats() calls since clearCollectiveStats()),
  // median time per call and nccl-tests algbw/busbw. Backends without
  // timing return an empty vector.
  virtual std::vector<CollectiveStat> collectiveStats() const { return {}; }
  // Forgets the samples behind collectiveStats() (call after warmup).
  virtual void clearCollectiveStats() {}
};

struct CommOptions {
  std::string device = "cpu";  // "cuda..." selects NCCL when built in
  double timeout_s = 0;        // bound on any one collective; 0 = none
  bool force_local = false;    // ignore MPI even when launched by mpirun
  // "mpi", "gloo" or "nccl"; "" = NCCL for CUDA when built in, else MPI
  // (et_replay fills it from the trace with pickCommBackend).
  std::string backend;
};

// The communicator for this process: `options.backend` (on top of MPI) when
// launched by mpirun with more than one rank, else local.
std::unique_ptr<Communicator> makeCommunicator(const CommOptions& options);

// True when this build has the backend ("mpi", "gloo", "nccl").
bool commBackendBuilt(const std::string& name);
// Throws InputError (naming --comm) for an unknown backend, one this build
// lacks, or nccl without a CUDA device.
void checkCommBackend(const CommOptions& options);
// The backend to replay `trace` on: options.backend when set; else the one
// its process groups recorded (e.g. "cpu:gloo") when this build has it; else
// NCCL for CUDA when built in, else MPI.
std::string pickCommBackend(const trace::Trace& trace, const CommOptions& options);
// `control` (MPI, or local for one rank) moved onto `backend`: gloo and NCCL
// run on top of it; a one-rank world stays local. When setting up gloo
// fails, `control` is left as it was (the caller can still abort the job).
std::unique_ptr<Communicator> switchCommBackend(std::unique_ptr<Communicator>& control,
                                                const std::string& backend,
                                                const CommOptions& options);

// This process's rank among those on its node, as the launcher says
// (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, MV2_COMM_WORLD_LOCAL_RANK,
// SLURM_LOCALID, LOCAL_RANK); -1 when none does.
int launcherLocalRank();

// The device a rank replays on: `asked` with its index kept ("cuda:2"); a
// bare "cuda" is the rank's own GPU, local rank modulo `devices` (as NCCL's
// communicator sets it), or device 0 with no local rank.
std::string rankDevice(const std::string& asked, int local_rank, int devices);

// A world of one rank: every call completes immediately and is counted.
// Used for single-rank replay and whenever MPI is not initialised.
std::unique_ptr<Communicator> makeLocalCommunicator();

}  // namespace etb::replay
