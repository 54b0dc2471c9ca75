// SPDX-License-Identifier: MIT
//
// Passes the ET JSON reader runs after decoding the nodes. Internal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model/trace.h"
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

// The "nodes" array of a document cut into chunks at element boundaries.
// Chunk k spans text[cuts[k]] to text[cuts[k + 1]]: the array's '[' or a
// separating ',' to a ',' or the array's ']', and holds counts[k] elements.
struct NodeSplit {
  std::vector<size_t> cuts;
  std::vector<size_t> counts;
  size_t count = 0;  // elements in the whole array
};

// Scans the top level of `text` (string-aware, no parsing) and cuts its
// "nodes" array after every `chunk_bytes` or so. False when the layout is
// not a plain {"key": value, ...} object with one "nodes" array: the caller
// then parses the whole document. Only right for valid JSON; the caller
// must still have simdjson check every byte.
bool splitNodes(std::string_view text, size_t chunk_bytes, NodeSplit* out);

}  // namespace etb::trace::detail
