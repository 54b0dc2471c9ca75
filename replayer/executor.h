// SPDX-License-Identifier: MIT
//
// Runs a prepared Plan, one iteration at a time.
#pragma once

#include <memory>
#include <string>
#include <optional>
#include <unordered_map>
#include <vector>

#include "replayer/comm/communicator.h"
#include "replayer/host_time.h"
#include "replayer/op_plan.h"
#include "replayer/replayer.h"
#include "replayer/timer.h"

namespace etb::replay::detail {

// Text for the reasons and mismatches the executor reports (executor.cc and
// executor_adapt.cc): an error's first line, cut at `cap` characters; a
// size or stride list, "[4, 3]".
std::string firstLine(const std::string& text, size_t cap = 160);
std::string shapeText(c10::IntArrayRef xs);

struct IterationRecord {
  double wall_us = 0;
  std::vector<double> step_us;     // per plan step
  std::vector<double> step_start;  // offset from the iteration start
  // Per plan step: the replay's own time since the previous op call ended
  // (argument set-up, output binding, frees, timers; host spins too), and
  // from the last call's end to the iteration's end.
  std::vector<double> lead_us;
  std::vector<double> call_us;  // per plan step: the op call itself, -1 when none
  double tail_us = 0;
  // With fault counting on (setCountFaults): the minor page faults each
  // step took, its op call and the frees after it; empty otherwise.
  std::vector<double> faults;
  // With device timing on (setDeviceTiming): each op call's device time.
  StepDeviceTimes device;
  CommStats comm;
};

class Executor {
 public:
  Executor(const trace::Trace& trace, Plan& plan, Communicator& comm, DeviceSync& sync);

  // Runs every step once. With `track` set, follows the bytes held by
  // tensors (peakBytes()) and, when `diag` is given, checks each output
  // against the recording. An op that throws is turned into a skipped op
  // (reason recorded in the plan's coverage) whose outputs are synthesised
  // from then on.
  IterationRecord runIteration(bool track, ReplayDiagnostics* diag);

  // Sizes the records of the next `n` iterations now. An iteration's record
  // allocated as it starts outlives it, and glibc places such small blocks
  // among the ops' freed tensors or at the heap's top, where they can keep
  // it from shrinking: the heap the ops ran on then followed the replayer's
  // bookkeeping. Sized up front, no block outlives an iteration but the
  // ops' own (an allocation log of mlp's last three iterations).
  void reserveRecords(size_t n);
  // Gives a record whose figures are not kept back for a later iteration
  // (the heap match's probe iterations), so that those take none of the
  // records sized for the measured ones.
  void recycle(IterationRecord rec);

  uint64_t peakBytes() const { return peak_bytes_; }

  // Draws every leaf that a step writes (an in-place op's self, an out=
  // argument, a collective's buffer) again before each following
  // iteration, outside its timed part, with the same values each time
  // (refillLeaves): every iteration starts from the same state, as the
  // recorded one ran once. Iterations that carry on from each other train
  // on made-up data: a replayed resnet18 or mlp ran to NaN within two or
  // three. No copy is kept (a model's parameters and optimizer state twice
  // over would not fit where they barely do). Returns the leaves' bytes.
  int64_t keepStartState(const PlanOptions& options);

  // Device timing on: every op call of the following iterations is timed
  // on the device (DeviceSync::beforeCall/afterCall), which costs host time;
  // the iterations' records carry the times in `device`.
  void setDeviceTiming(bool on) { device_timing_ = on && sync_.timesDevice(); }

  // Collectives off: their steps do nothing (outputs keep their last
  // values). For the host-time calibration in a forked child of a multi-rank
  // job, which must not talk to the other ranks.
  void setCommEnabled(bool on) { comm_enabled_ = on; }

  // Page faults per step in the following iterations' records: two
  // getrusage calls per step, so only for iterations that are not timed.
  void setCountFaults(bool on) { count_faults_ = on; }

  // Host-overhead emulation: busy-wait before_us[i] before plan step i and
  // after_us after the last one (outside the steps' own times). Empty = off.
  void setHostGaps(std::vector<double> before_us, double after_us) {
    host_before_us_ = std::move(before_us);
    host_after_us_ = after_us;
    spinner_.reset();
  }

 private:
  void runOp(PlanStep& step, bool track, ReplayDiagnostics* diag);
  void pushArgs(const PlanStep& step);
  bool call(PlanStep& step, std::string* error);
  bool tryFloat32(PlanStep& step, const std::string& error);
  bool tryClampIndices(PlanStep& step, const std::string& error);
  bool tryFixMask(PlanStep& step, const std::string& error);
  void adapt(PlanStep& step, const std::string& what);
  at::Tensor pinned(PlanStep& step, const OutBinding& o, at::Tensor t);
  at::Tensor pinnedNnz(PlanStep& step, at::Tensor t);
  void runComm(PlanStep& step);
  void waitForInputs(const PlanStep& step);
  void synthesise(const PlanStep& step);
  void markFailed(PlanStep& step, const std::string& what);
  void verify(const PlanStep& step, ReplayDiagnostics* diag) const;
  // Lists `step` in the coverage's nan_ops when an output holds NaN and
  // its inputs are finite (the first iteration, the one that tracks).
  void checkNan(const PlanStep& step);
  void hold(const at::Tensor& t, int delta);

  const trace::Trace& trace_;
  Plan& plan_;
  Communicator& comm_;
  DeviceSync& sync_;
  std::vector<c10::IValue> stack_;
  std::vector<IterationRecord> spare_;  // reserveRecords()
  std::vector<int32_t> state_slots_;  // keepStartState()
  std::optional<PlanOptions> state_options_;
  void restoreStartState();
  struct Pending {
    int32_t pg;
    int64_t seq;
    std::shared_ptr<Work> work;
    std::vector<int32_t> slots;  // the call's tensors: an op reading one waits first
    trace::NodeId node;          // a node with a data dependency on it waits first,
    bool send = false;           // unless it is a send (it completes by the iteration's end)
  };
  std::vector<Pending> pending_;
  std::vector<char> comm_counted_;
  // Bytes held per storage while tracking: refcount by StorageImpl.
  std::unordered_map<const void*, std::pair<int64_t, uint64_t>> held_;
  uint64_t cur_bytes_ = 0, peak_bytes_ = 0;
  std::vector<double> host_before_us_;
  double host_after_us_ = 0;
  HostSpinner spinner_;
  double call_t0_ = 0, call_t1_ = 0;  // the last op call's start and end (call())
  bool comm_enabled_ = true;
  bool device_timing_ = false;
  bool count_faults_ = false;
};

}  // namespace etb::replay::detail
