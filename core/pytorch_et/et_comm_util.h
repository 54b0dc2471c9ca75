// SPDX-License-Identifier: MIT
//
// Helpers behind classifyNodes(): process-group config, comm info from
// record_param_comms and from bare c10d:: ops, rank inference. Internal.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/trace.h"
#include "core/trace_io.h"

namespace etb::trace::detail {

constexpr std::string_view kPgInitName = "## process_group:init ##";

// Maps the 1.0.2 backend_id (and 1.0.1 pg pointers) to process_groups.
using PgByBackend = std::unordered_map<int64_t, int32_t>;

// Parses the JSON string of a "## process_group:init ##" node into
// t.process_groups. A config cut off by the observer's string cap keeps the
// complete groups and records a repair.
void parseProcessGroups(Trace& t, const ReadOptions& options, const Node& n,
                        PgByBackend* by_backend);

// CommInfo of a record_param_comms node: comm attrs (1.1.0+) first, then
// the positional inputs of every layout. Appends this file's global rank and
// the world size to the votes when the node reveals them.
CommInfo commFromRecordParamComms(Trace& t, const Node& n, const PgByBackend& pgs,
                                  std::vector<int64_t>* rank_votes,
                                  std::vector<int64_t>* world_votes);

// CommInfo of a c10d:: op (c10d::allreduce_, ...) from its arguments, named
// by its op_schema. False when the op is not a communication.
bool commFromC10dOp(Trace& t, const Node& n, CommInfo* out);

// Sets t.rank / t.world_size from the votes, the process groups, and the
// single cuda:N device the tensors live on.
void inferRank(Trace& t, const std::vector<int64_t>& rank_votes,
               const std::vector<int64_t>& world_votes);

// Sum of numel / first dtype over the tensors inside a value (recursive).
uint64_t sumNumel(const Trace& t, const Value& v);
DType firstDType(const Trace& t, const Value& v);

}  // namespace etb::trace::detail
