// SPDX-License-Identifier: MIT
#include "replayer/comm/comm_stats.h"

#include <algorithm>

namespace etb::replay::comm {

double algbwGBps(uint64_t bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(bytes) / (time_us * 1e3) : 0;
}

void StatsRecorder::record(const Message& m, const std::string& group, double busy_us,
                           double exposed_us) {
  ++stats_.calls;
  stats_.bytes += m.algo_bytes;
  stats_.busy_us += busy_us;
  stats_.exposed_us += exposed_us;
  samples_[Key{std::string(trace::commTypeName(m.type)), group, m.algo_bytes, m.busbw_factor}]
      .push_back(busy_us);
}

std::vector<CollectiveStat> StatsRecorder::collectiveStats() const {
  std::vector<CollectiveStat> out;
  const uint64_t iters = std::max<uint64_t>(iterations_, 1);
  for (const auto& [key, times] : samples_) {
    std::vector<double> t = times;
    std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
    CollectiveStat s;
    s.type = std::get<0>(key);
    s.group = std::get<1>(key);
    s.bytes = std::get<2>(key);
    s.count = (times.size() + iters - 1) / iters;
    s.time_us = t[t.size() / 2];
    s.algbw_gbps = algbwGBps(s.bytes, s.time_us);
    s.busbw_gbps = s.algbw_gbps * std::get<3>(key);
    out.push_back(s);
  }
  return out;
}

}  // namespace etb::replay::comm
