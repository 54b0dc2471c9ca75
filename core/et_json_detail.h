// SPDX-License-Identifier: MIT
//
// Passes the ET JSON reader runs after decoding the nodes. Internal.
#pragma once

#include <string>
#include <string_view>

#include "core/trace.h"
#include "core/trace_io.h"

namespace etb::trace::detail {

// Records a repair, or throws InputError (naming `node`) in strict mode.
void repairOrThrow(Trace& t, const ReadOptions& options, NodeId node,
                   std::string what);

// Requires sorted nodes. Rejects duplicate ids and parent cycles; reparents
// dangling parents to their thread's root (or 0), recording each repair.
void checkGraph(Trace& t, const ReadOptions& options);

// Sets every node's kind, parses the process-group config, builds CommInfo
// for record_param_comms (and for bare c10d:: collectives that have none),
// pairs async collectives with their waits, and infers rank/world size.
void classifyNodes(Trace& t, const ReadOptions& options);

// 1-based line of the node with this id in `text` (0 when not found); only
// used to point error messages at the right place.
uint64_t lineOfNode(std::string_view text, NodeId id);

}  // namespace etb::trace::detail
