// SPDX-License-Identifier: MIT
//
// Counters and per-collective samples a backend keeps while replaying.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "replayer/comm/comm_plan.h"
#include "replayer/comm/communicator.h"

namespace etb::replay::comm {

class StatsRecorder {
 public:
  // One completed call: `busy_us` from post to completion, `exposed_us` the
  // host time blocked in it (post + wait for async calls).
  void record(const Message& m, const std::string& group, double busy_us, double exposed_us);
  CommStats stats() const { return stats_; }
  void resetStats() {
    stats_ = CommStats{};
    ++iterations_;
  }
  std::vector<CollectiveStat> collectiveStats() const;
  void clearCollectiveStats() {
    samples_.clear();
    iterations_ = 0;
  }

 private:
  using Key = std::tuple<std::string, std::string, uint64_t, double>;  // type, group, bytes, factor
  CommStats stats_;
  std::map<Key, std::vector<double>> samples_;
  uint64_t iterations_ = 0;
};

// nccl-tests: algbw = bytes / time; busbw = algbw * factor (GB/s).
double algbwGBps(uint64_t bytes, double time_us);

}  // namespace etb::replay::comm
