// SPDX-License-Identifier: MIT
#include "predictor/schedule.h"

#include <algorithm>
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

class Scheduler {
 public:
  Scheduler(const std::vector<std::vector<Step>>& steps, std::vector<RankPrediction>& ranks)
      : steps_(steps), ranks_(ranks), pc_(steps.size(), 0), t_(steps.size(), 0),
        posted_(steps.size(), false), pending_(steps.size()) {}

  void run() {
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t r = 0; r < steps_.size(); ++r) progress |= advance(r);
    }
    for (size_t r = 0; r < steps_.size(); ++r) {
      if (pc_[r] < steps_[r].size()) stuck(r);
      for (const Pending& p : pending_[r]) block(r, instances_[p.key].end);
      ranks_[r].iter_us = t_[r];
    }
  }

 private:
  // Runs rank r until it blocks or ends; true when it moved.
  bool advance(size_t r) {
    bool moved = false;
    while (pc_[r] < steps_[r].size()) {
      const Step& s = steps_[r][pc_[r]];
      if (s.kind == Step::Kind::kCompute) {
        ranks_[r].ops[s.op].start_us = t_[r];
        t_[r] += s.us;
      } else if (s.kind == Step::Kind::kCollective) {
        if (!collective(r, s)) return moved;
      } else if (!wait(r, s)) {
        return moved;
      }
      ++pc_[r];
      posted_[r] = false;
      moved = true;
    }
    return moved;
  }

  bool collective(size_t r, const Step& s) {
    Instance& in = instances_[s.key];
    if (!posted_[r]) {
      posted_[r] = true;
      ranks_[r].ops[s.op].start_us = t_[r];
      in.last_arrival = in.arrived == 0 ? t_[r] : std::max(in.last_arrival, t_[r]);
      if (++in.arrived == s.members) in.end = in.last_arrival + s.us;
    }
    if (s.async) {
      pending_[r].push_back({s.key, s.pg, s.seq});
      return true;
    }
    if (in.end < 0) return false;
    block(r, in.end);
    return true;
  }

  bool wait(size_t r, const Step& s) {
    auto& list = pending_[r];
    for (const Pending& p : list) {
      if ((s.seq < 0 || (p.pg == s.pg && p.seq == s.seq)) && instances_[p.key].end < 0) return false;
    }
    for (auto it = list.begin(); it != list.end();) {
      if (s.seq < 0 || (it->pg == s.pg && it->seq == s.seq)) {
        block(r, instances_[it->key].end);
        it = list.erase(it);
      } else {
        ++it;
      }
    }
    return true;
  }

  void block(size_t r, double until) {
    if (until > t_[r]) {
      ranks_[r].exposed_comm_us += until - t_[r];
      t_[r] = until;
    }
  }

  [[noreturn]] void stuck(size_t r) const {
    const Step& s = steps_[r][pc_[r]];
    const OpPrediction& op = ranks_[r].ops[s.op];
    const SourceLoc loc{"rank " + std::to_string(r), 0, op.node_id, op.name};
    ETB_INPUT_ERROR(loc, "waits for collective ", s.key, " that its other ranks never issue ",
                    "(collective sequences differ between ranks)");
  }

  const std::vector<std::vector<Step>>& steps_;
  std::vector<RankPrediction>& ranks_;
  std::vector<size_t> pc_;
  std::vector<double> t_;
  std::vector<bool> posted_;
  std::vector<std::vector<Pending>> pending_;
  std::map<std::string, Instance> instances_;
};
}  // namespace

void runSchedule(const std::vector<std::vector<Step>>& steps, std::vector<RankPrediction>& ranks) {
  Scheduler(steps, ranks).run();
}

}  // namespace etb::predict
