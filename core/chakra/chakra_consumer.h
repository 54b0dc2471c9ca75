// SPDX-License-Identifier: MIT
//
// What the consumers of a .et file read, as facts from their code (see
// ../shared/docs/chakra_and_astrasim.md, "Observed when running the real
// consumers"): ASTRA-sim's FeederV3 getters convert between integer kinds
// (and integer -> float) only, anything else aborts the simulation; its
// workload layer simulates only five collective types; communicator groups
// are ids > 0 given in a JSON file and named by each node's pg_name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/trace.h"

namespace etb::trace::chakra {

// The value kinds the consumers' getters accept, and the proto kind we write.
enum class Want : uint8_t { kBool, kInt, kString, kBoolList };
struct ConsumerAttr {
  const char* name;
  Want want;
  const char* kind;  // proto kind written ("bool", "int64", ...)
};
// nullptr when `name` is not read by a simulator.
const ConsumerAttr* consumerAttr(std::string_view name);

// `v` converted to what the consumer reads (Attr::type = the written kind);
// nullopt when it cannot be ("yes" for a bool, a string for a size).
std::optional<Attr> toConsumerKind(Trace& scratch, const Trace& t, const Attr& a,
                                   const ConsumerAttr& want);

// Where a communication goes in the file. `node_type` is a Chakra NodeType;
// `comm_type` the CollectiveCommType for COMM_COLL_NODE; `remap` names a
// substitution ("reduce->ALL_REDUCE"), empty when the type is written as is.
struct CommPlacement {
  int node_type = 0;
  int64_t comm_type = -1;
  std::string remap;
};
CommPlacement placeComm(const CommInfo& c);

// The simulated collective types (ALL_REDUCE, ALL_GATHER, BROADCAST,
// ALL_TO_ALL, REDUCE_SCATTER).
bool isSimulatedCommType(int64_t chakra_comm_type);

// The recorded process-group key of a comm ("" = not recorded: the world).
std::string pgKey(const Trace& t, const CommInfo& c);

// Communicator-group ids for the simulator: every recorded key gets an id
// "1", "2", ... (0 is reserved by ASTRA-sim), numeric keys in numeric order.
std::map<std::string, std::string> assignPgIds(const std::vector<std::string>& keys);

}  // namespace etb::trace::chakra
