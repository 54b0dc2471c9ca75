// SPDX-License-Identifier: MIT
//
// What a user wants to know first about a trace (et_inspect): format, schema,
// ranks, node counts, top operators, collectives, process groups, iterations
// and what the reader repaired. Computed from the Trace model only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/trace.h"

namespace etb::trace {

struct OpStat {
  std::string name;
  size_t count = 0;
  double total_us = 0;      // inclusive time of the timed calls
  double gpu_us = 0;        // kernel time attributed to the calls
  size_t timed = 0;         // calls with a duration
};

struct CollectiveStat {
  std::string type;  // commTypeName(): "all_reduce", ...
  size_t count = 0;
  uint64_t bytes = 0;  // sum of the calls' message sizes
};

struct IterationStat {
  std::string name;  // "ProfilerStep#3"
  NodeId marker = 0;
  size_t nodes = 0;      // nodes whose id lies in [begin, end)
  double dur_us = -1;    // from a linked Kineto trace; < 0 = unknown
};

struct TraceSummary {
  std::string path;
  std::string format;  // "pytorch-et-json", "chakra-protobuf", "unknown"
  std::string schema;
  int64_t rank = -1;
  int64_t world_size = -1;

  size_t nodes = 0;
  std::vector<std::pair<std::string, size_t>> nodes_by_kind;  // kind order
  size_t operators = 0;         // kOperator nodes
  size_t distinct_operators = 0;
  size_t timed_operators = 0;   // operators with a duration (linked)
  size_t kernels = 0;           // GPU kernels attached by a Kineto link
  double kernel_us = 0;         // their summed durations (trace.kernels)
  double node_gpu_us = 0;       // the same time as the nodes hold it (Node::gpu_dur_us)
  std::vector<OpStat> top_by_count;  // at most top_n, most calls first
  std::vector<OpStat> top_by_time;   // empty unless some operator is timed

  std::vector<CollectiveStat> collectives;  // by CommType order
  std::vector<ProcessGroup> process_groups;
  std::vector<IterationStat> iterations;

  size_t repair_count = 0;
  std::vector<Repair> first_repairs;  // the first few, in reader order

  // Percentage of operators given a duration; 0 when there are none.
  double linkedPercent() const;
};

// Summarises `trace`; `top_n` bounds the operator tables and `max_repairs`
// the repairs listed (all are counted).
TraceSummary summarizeTrace(const Trace& trace, size_t top_n = 10,
                            size_t max_repairs = 5);

// The same content as JSON (stable keys; et_inspect --json prints it).
nlohmann::json summaryToJson(const TraceSummary& summary);

// A human-readable report, one section per topic.
void printSummary(const TraceSummary& summary, std::ostream& os);

}  // namespace etb::trace
