// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "core/model/trace.h"

namespace etb::trace {

struct ChakraWriteOptions {
  // Communicator-group id ("1", "2", ...) per recorded process-group key
  // (chakra::pgKey). Empty: ids are assigned from this trace alone. A
  // multi-rank set passes one map for all ranks so that ids agree.
  std::map<std::string, std::string> pg_ids;
};

// What the writer changed for the simulator, for et_convert to report.
struct ChakraWriteReport {
  std::map<std::string, size_t> remapped;  // "reduce->ALL_REDUCE" -> nodes
  std::map<std::string, size_t> dropped;   // consumer attr not convertible -> nodes
  size_t nodes = 0;
  size_t comm_nodes = 0;   // COMM_COLL / SEND / RECV written
  size_t gpu_kernels = 0;  // profiler kernels written as GPU compute nodes
  size_t ungrouped = 0;    // comm nodes without a group id (run on all ranks)
  size_t timed_nodes = 0;  // duration_micros > 0
  size_t data_deps = 0;
  size_t ready_at_start = 0;  // scheduled nodes without data_deps
  std::set<std::string> pg_keys;  // recorded group keys of the comm nodes
};

// Writes a Chakra .et stream that ASTRA-sim's FeederV3, Chakra's classic
// feeder and Chakra's Python tools accept: GlobalMetadata first with both
// `version` and a `schema` attr; no empty messages; every attribute a
// simulator reads in a kind its getter converts (chakra_consumer.h); only
// simulated collective types on COMM_COLL nodes; execution order as data_deps
// and exclusive durations (chakra_schedule.h); no dependency on a missing
// node, no self-dependency, no cycle. etbench's own etb_* attributes keep
// what the consumers' forms lose, so .et -> Trace gives back the Trace.
std::string writeChakraBytes(const Trace& trace, const ChakraWriteOptions& options = {},
                             ChakraWriteReport* report = nullptr);
void writeChakra(const Trace& trace, const std::string& path,  // .gz aware
                 const ChakraWriteOptions& options = {}, ChakraWriteReport* report = nullptr);

}  // namespace etb::trace
