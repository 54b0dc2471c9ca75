// SPDX-License-Identifier: MIT
#include "predictor/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/base/error.h"

namespace etb::predict {
namespace {

struct Instance {
  int arrived = 0;
  double last_arrival = 0;
  double end = -1;  // known once every member arrived
};

struct Pending {
  std::string key;
  int32_t pg = -1;
  int64_t seq = -1;
};

// Where one rank is: at step pc, computing (`left` us of CPU work to go),
// blocked until a known time, or waiting for a collective's other members.
struct RankState {
  size_t pc = 0;
  double left = -1;         // < 0: the compute step at pc has not started
  double until = -1;        // blocked until then (communication)
  double arrived = -1;      // when it posted the synchronous collective at pc
  std::vector<Pending> pending;
  bool done = false;
};

class Scheduler {
 public:
  Scheduler(const std::vector<std::vector<Step>>& steps, std::vector<RankPrediction>& ranks, int cores)
      : steps_(steps), ranks_(ranks), st_(steps.size()), cores_(cores) {}

  void run() {
    for (;;) {
      bool moved = true;
      while (moved) {
        moved = false;
        for (size_t r = 0; r < steps_.size(); ++r) moved |= settle(r);
      }
      if (!advanceClock()) break;
    }
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
      if (s.until > now_) return moved;
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
      s.left = s.arrived = -1;
      moved = true;
    }
    return moved;
  }

  // All steps taken: pending async collectives end the iteration. True
  // when that changed anything.
  bool finish(size_t r) {
    RankState& s = st_[r];
    for (const Pending& p : s.pending) {
      if (instances_[p.key].end < 0) return false;  // a member has not posted it yet
    }
    for (const Pending& p : s.pending) block(r, now_, instances_[p.key].end);
    s.pending.clear();
    if (s.until > now_) return true;
    s.done = true;
    ranks_[r].iter_us = now_;
    return true;
  }

  bool collective(size_t r, const Step& step) {
    RankState& s = st_[r];
    Instance& in = instances_[step.key];
    if (s.arrived < 0) {
      s.arrived = now_;
      ranks_[r].ops[step.op].start_us = now_;
      in.last_arrival = in.arrived == 0 ? now_ : std::max(in.last_arrival, now_);
      if (++in.arrived == step.members) in.end = in.last_arrival + step.us;
      if (step.async) {
        s.pending.push_back({step.key, step.pg, step.seq});
        return true;
      }
    }
    if (in.end < 0) return false;
    block(r, s.arrived, in.end);
    return true;
  }

  bool wait(size_t r, const Step& step) {
    auto& list = st_[r].pending;
    const auto matches = [&](const Pending& p) {
      return step.seq < 0 || (p.pg == step.pg && p.seq == step.seq);
    };
    for (const Pending& p : list) {
      if (matches(p) && instances_[p.key].end < 0) return false;
    }
    for (auto it = list.begin(); it != list.end();) {
      if (!matches(*it)) {
        ++it;
        continue;
      }
      block(r, now_, instances_[it->key].end);
      it = list.erase(it);
    }
    return true;
  }

  // Rank r has been held since `from` and is until `until`: exposed time.
  void block(size_t r, double from, double until) {
    RankState& s = st_[r];
    ranks_[r].exposed_comm_us += std::max(0.0, until - std::max(from, s.until));
    s.until = std::max(s.until, until);
  }

  // Moves the clock to the next completion of a compute step or of a block;
  // false when nothing is left that time would change. The steps that
  // complete are set to exactly nothing left (no rounding residue that
  // would stall the clock).
  bool advanceClock() {
    std::vector<size_t> computing;
    double dt = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < steps_.size(); ++r) {
      const RankState& s = st_[r];
      if (s.done) continue;
      if (s.until > now_) dt = std::min(dt, s.until - now_);
      else if (s.left > 0) computing.push_back(r);
    }
    const double n = static_cast<double>(computing.size());
    const double rate = cores_ > 0 && n > cores_ ? cores_ / n : 1.0;
    for (size_t r : computing) dt = std::min(dt, st_[r].left / rate);
    if (!std::isfinite(dt)) return false;
    for (size_t r : computing) {
      double& left = st_[r].left;
      left = left / rate <= dt ? 0 : left - dt * rate;
    }
    now_ += dt;
    for (RankState& s : st_) {
      if (s.until > now_ && s.until - now_ <= 1e-12 * std::max(1.0, now_)) s.until = now_;
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
