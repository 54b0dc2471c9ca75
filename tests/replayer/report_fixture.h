// SPDX-License-Identifier: MIT
//
// A ReplayResult shaped like a two-rank replay of a small training step, for
// the reporter tests. The figures are arbitrary but consistent (coverage adds
// up, kinds sum their ops), so every reporter section has something to show.
#pragma once

#include <string>

#include "replayer/replay_result.h"

namespace etb::replay::testing {

inline ReplayResult sampleResult(const std::string& hostile_name = "aten::mm") {
  ReplayResult r;
  r.argv = {"et_replay", "--iters", "5", "bench.json"};
  r.trace_path = "bench.json";
  r.schema = "1.0.1";
  r.device = "cpu";
  r.threads = 2;
  r.warmup = 1;
  r.iters = 5;
  r.world_size = 2;
  r.host = "node0";
  r.etbench_version = "0.1.0";
  r.torch_version = "1.13.1";
  r.comm_backend = "mpi";
  r.coverage.operators = 4;
  r.coverage.replayed = 3;
  r.coverage.skipped = 1;
  r.coverage.skipped_by_reason["no kernel for CPU"] = 1;
  r.coverage.skipped_ops.push_back({42, "fbgemm::jagged_to_padded", "no kernel for CPU"});
  r.coverage.comms = 1;
  r.coverage.comms_replayed = 1;
  r.replay_iter_ms = summarize({10.5, 11.0, 10.8, 12.1, 10.9});
  r.original_iter_ms = summarize({10.0, 10.2, 9.9});
  r.original_source = "kineto";
  r.ops = {{1, hostile_name, "", true, false, 3000, 2500, 0},
           {2, "aten::relu", "", true, false, 400, -1, 3000},
           {3, "aten::add_", "Tensor", true, false, 600, 650, 3400},
           {42, "fbgemm::jagged_to_padded", "", false, false, 0, 100, 4000},
           {5, "nccl:all_reduce", "", true, true, 5000, 4800, 4000}};
  r.kinds = {{hostile_name, 1, 3000, 2500}, {"aten::relu", 1, 400, -1},
             {"aten::add_", 1, 600, 650}, {"nccl:all_reduce", 1, 5000, 4800}};
  r.collectives = {{"all_reduce", "default_pg", 4 << 20, 1, 5000, 0.839, 0.839}};
  for (int rank = 0; rank < 2; ++rank) {
    RankResult k;
    k.rank = rank;
    k.host = "node" + std::to_string(rank);
    k.iter_ms = summarize({10.9 + rank, 11.0 + rank});
    k.comm_ms = 5.0;
    k.exposed_comm_ms = 1.5 + rank;
    k.comm_bytes = 4 << 20;
    k.system.cpu_util_pct = 180 + rank;
    k.system.peak_rss_bytes = uint64_t{300} << 20;
    r.ranks.push_back(k);
  }
  r.system = r.ranks[0].system;
  r.system.peak_tensor_bytes = 64 << 20;
  for (const OpStat& op : r.ops) {
    r.timeline.push_back({op.name, op.is_comm ? "comm" : "op", op.node_id, 0,
                          op.is_comm ? 1 : 0, op.start_us, op.replay_us});
  }
  r.timeline.push_back({"iteration", "iteration", 0, 1, 0, 0, 11000});
  return r;
}

// sampleResult() with device times on both sides for two ops (GPU replays).
inline ReplayResult withDeviceTimes() {
  ReplayResult r = sampleResult();
  r.ops[0].device_us = 2100;
  r.ops[0].original_device_us = 1900;
  r.ops[2].original_device_us = 450;
  r.kinds[0].device_us = 2100;
  r.kinds[0].original_device_us = 1900;
  r.kinds[2].original_device_us = 450;
  DeviceTime d;
  d.iters = 3;
  d.replay_ms = 2.1;
  d.timed_ops = 1;
  d.events_per_iter = 2;
  d.timed_iter_ms = summarize({11.5, 11.7, 11.6});
  d.original_ms = 7.25;
  d.original_ops_ms = 2.35;
  d.original_comm_ms = 0;
  r.device_time = d;
  return r;
}

}  // namespace etb::replay::testing
