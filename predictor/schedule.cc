// SPDX-License-Identifier: MIT
#include "predictor/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/base/error.h"

namespace etb::predict {
namespace {

// One collective call across its group: it runs once every member posted
// it, as a job of its measured time on the shared cores.
struct Instance {
  int arrived = 0;
  int members = 1;
  double left = -1;  // work to go once every member arrived
  double end = -1;   // known once it completed
};

struct Pending {
  std::string key;
  int32_t pg = -1;
  int64_t seq = -1;
};

// Where one rank is: at step pc, computing (`left` us of CPU work to go)
// or blocked on communication since `blocked`.
struct RankState {
  size_t pc = 0;
  double left = -1;     // < 0: the compute step at pc has not started
  double blocked = -1;  // when it started waiting at pc (or at the end)
  bool posted = false;  // the collective at pc was posted
  std::vector<Pending> pending;
  bool done = false;
};

class Scheduler {
 public:
  Scheduler(const std::vector<std::vector<Step>>& steps, std::vector<RankPrediction>& ranks, int cores)
      : steps_(steps), ranks_(ranks), st_(steps.size()), cores_(cores) {}

  void run() {
    do {
      bool moved = true;
      while (moved) {
        moved = false;
        for (size_t r = 0; r < steps_.size(); ++r) moved |= settle(r);
      }
    } while (advanceClock());
    for (size_t r = 0; r < steps_.size(); ++r) {
      if (!st_[r].done) stuck(r);
    }
  }

 private:
  // Takes every step of rank r that completes at the current time; true
  // when it moved.
  bool settle(size_t r) {
    RankState& s = st_[r];
    bool moved = false;
    while (!s.done) {
      if (s.pc == steps_[r].size()) return finish(r) || moved;
      const Step& step = steps_[r][s.pc];
      if (step.kind == Step::Kind::kCompute) {
        if (s.left < 0) {
          ranks_[r].ops[step.op].start_us = now_;
          s.left = step.us;
        }
        if (s.left > 0) return moved;
      } else if (step.kind == Step::Kind::kCollective) {
        if (!collective(r, step)) return moved;
      } else if (!wait(r, step)) {
        return moved;
      }
      ++s.pc;
      s.left = s.blocked = -1;
      s.posted = false;
      moved = true;
    }
    return moved;
  }

  // All steps taken: pending async collectives end the iteration. True
  // when the rank is done.
  bool finish(size_t r) {
    RankState& s = st_[r];
    if (!unblocked(r, [](const Pending&) { return true; })) return false;
    s.done = true;
    ranks_[r].iter_us = now_;
    return true;
  }

  bool collective(size_t r, const Step& step) {
    RankState& s = st_[r];
    Instance& in = instances_[step.key];
    if (!s.posted) {
      s.posted = true;
      ranks_[r].ops[step.op].start_us = now_;
      in.members = step.members;
      if (++in.arrived == step.members) {
        in.left = step.us;
        if (in.left <= 0) in.end = now_;
      }
      if (step.async) {
        s.pending.push_back({step.key, step.pg, step.seq});
        return true;
      }
      s.blocked = now_;
    }
    if (in.end < 0) return false;
    ranks_[r].exposed_comm_us += now_ - s.blocked;
    return true;
  }

  bool wait(size_t r, const Step& step) {
    return unblocked(r, [&](const Pending& p) {
      return step.seq < 0 || (p.pg == step.pg && p.seq == step.seq);
    });
  }

  // True once every pending collective `matches` selects has completed
  // (they are then dropped); the time waited for them is exposed.
  template <typename Match>
  bool unblocked(size_t r, Match matches) {
    RankState& s = st_[r];
    if (s.blocked < 0) s.blocked = now_;
    for (const Pending& p : s.pending) {
      if (matches(p) && instances_[p.key].end < 0) return false;
    }
    s.pending.erase(std::remove_if(s.pending.begin(), s.pending.end(), matches), s.pending.end());
    ranks_[r].exposed_comm_us += now_ - s.blocked;
    s.blocked = -1;
    return true;
  }

  // Moves the clock to the next completion of a compute step or of a
  // collective; false when nothing is running. With more demand than cores
  // every job runs at cores / demand: a computing rank wants one core, a
  // collective in flight the cores of its members (gloo and MPI move and
  // reduce the data on the host, so on shared cores they slow the compute
  // they overlap, and it them). Completed jobs are set to exactly nothing
  // left (no rounding residue that would stall the clock).
  bool advanceClock() {
    std::vector<double*> jobs;
    std::vector<Instance*> running;
    double demand = 0;
    for (size_t r = 0; r < steps_.size(); ++r) {
      RankState& s = st_[r];
      if (s.done || s.left <= 0) continue;
      jobs.push_back(&s.left);
      demand += 1;
    }
    for (auto& [key, in] : instances_) {
      if (in.left <= 0) continue;
      jobs.push_back(&in.left);
      running.push_back(&in);
      demand += cores_ > 0 ? std::min(in.members, cores_) : in.members;
    }
    if (jobs.empty()) return false;
    const double rate = cores_ > 0 && demand > cores_ ? cores_ / demand : 1.0;
    double dt = std::numeric_limits<double>::infinity();
    for (const double* left : jobs) dt = std::min(dt, *left / rate);
    for (double* left : jobs) *left = *left / rate <= dt ? 0 : *left - dt * rate;
    now_ += dt;
    for (Instance* in : running) {
      if (in->left <= 0) in->end = now_;
    }
    return true;
  }

  [[noreturn]] void stuck(size_t r) const {
    const size_t pc = std::min(st_[r].pc, steps_[r].size() - 1);
    const Step& s = steps_[r][pc];
    const OpPrediction& op = ranks_[r].ops[s.op];
    const SourceLoc loc{"rank " + std::to_string(r), 0, op.node_id, op.name};
    ETB_INPUT_ERROR(loc, "waits for collective ", s.key, " that its other ranks never issue ",
                    "(collective sequences differ between ranks)");
  }

  const std::vector<std::vector<Step>>& steps_;
  std::vector<RankPrediction>& ranks_;
  std::vector<RankState> st_;
  std::map<std::string, Instance> instances_;
  int cores_;
  double now_ = 0;
};
}  // namespace

void runSchedule(const std::vector<std::vector<Step>>& steps, std::vector<RankPrediction>& ranks,
                 int cores) {
  Scheduler(steps, ranks, cores).run();
}

}  // namespace etb::predict
