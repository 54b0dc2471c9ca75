// SPDX-License-Identifier: MIT
//
// What ASTRA-sim (its FeederV3 and workload layer, 518bd51) and Chakra's
// classic feeder do with a .et file, written down from their code as rules
// (../shared/docs/chakra_and_astrasim.md, 1.6-1.7 and "Observed when running
// the real consumers"), and checked on a file with the protobuf schema alone:
// no etbench reader is involved.
//
// Rules, by the name a violation carries:
//  framing        a length prefix or message runs past the end (trailing bytes)
//  empty_message  a zero-length message (Chakra's Python reader stops there)
//  metadata_first the first message is not a GlobalMetadata
//  node_parse     a message is not a Node (or has fields the schema lacks)
//  duplicate_id   two nodes with one id (FeederV3 indexes by id)
//  self_dep       a node depends on itself
//  missing_dep    a data_dep or ctrl_dep names a node not in the file
//  cycle          the dependency graph (data + ctrl) has a cycle
//  node_type      a type the workload layer does not run (it exits)
//  attr_kind      a getter's attr in a kind it cannot convert (std::bad_cast)
//  attr_range     a negative or too large value for an unsigned getter
//  missing_attr   a mandatory getter's attr is absent (it throws)
//  comm_type      a collective type ASTRA-sim does not simulate
//  comm_on_cpu    is_cpu_op true on a communication node
//  pg_name        a pg_name that is not a communicator-group id > 0
//  comm_group     (checkCommGroups) the group file does not match the traces
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace etb::test {

struct Violation {
  std::string rule;
  uint64_t node = 0;  // 0 when not about one node
  std::string what;
};

// One node as a simulator sees it.
struct SimNode {
  uint64_t id = 0;
  int type = 0;
  std::vector<uint64_t> data_deps;
  std::vector<uint64_t> ctrl_deps;
  uint64_t duration_micros = 0;
  bool is_cpu_op = false;
  int64_t tid = -1;        // attr "tid" when present
  int64_t comm_type = -1;  // COMM_COLL_NODE
  uint64_t comm_size = 0;
  std::string pg_name;
};

struct Conformance {
  std::vector<Violation> violations;
  std::vector<SimNode> nodes;   // in file order
  std::set<std::string> pg_names;  // non-empty pg_name values of comm nodes
  bool has(const std::string& rule) const;
  std::string summary(size_t max = 5) const;  // "rule node: what; ..." for failures
};

Conformance checkChakraConformance(const std::string& bytes);
Conformance checkChakraFile(const std::string& path);  // plain .et only

// The communicator-group JSON ({"1": [0, 1], ...}) against the pg_names the
// traces use and the number of ranks.
std::vector<Violation> checkCommGroups(const std::string& json_text,
                                       const std::set<std::string>& pg_names, int64_t ranks);

}  // namespace etb::test
