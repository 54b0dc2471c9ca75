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

// Finds, in a stream of JSON text, the top-level "nodes" array and cuts it
// into chunks at element boundaries (depth-1 commas), without parsing, so
// the reader can parse a chunk at a time and never hold the whole text.
// Resumable: text arrives in pieces and positions are the caller's. It only
// has to be right for valid JSON: the caller has simdjson check every byte
// (the header with the array emptied, and each chunk), and a chunk that is
// not the whole array must hold at least one element; anything else sends
// the reader to the whole-document path.
class NodeScanner {
 public:
  enum class Event { kNeedMore, kNodesStart, kCut, kNodesEnd };

  // Before the array: scans p[begin, end) byte by byte for the '[' that
  // opens the value of a depth-1 key "nodes". kNodesStart with *at on it,
  // or kNeedMore with *at == end.
  Event scanHead(const char* p, size_t begin, size_t end, size_t* at);

  // Inside the array (right after its '[' or a cut): kCut at the first
  // depth-1 ',' at or after `cut_from`, kNodesEnd at the array's ']', or
  // kNeedMore with *at where scanning stopped (a 64-byte multiple past
  // begin unless `last`, which scans to end). After kCut scanning resumes
  // right after the ','. `simd` = false forces the byte-by-byte path.
  Event scanNodes(const char* p, size_t begin, size_t end, size_t cut_from, bool last, size_t* at,
                  bool simd = true);

 private:
  Event scalar(const char* p, size_t begin, size_t end, size_t cut_from, size_t* at);
  bool block(const char* p, size_t i, size_t cut_from, Event* ev, size_t* at);

  bool in_string_ = false;
  bool escape_ = false;
  int64_t depth_ = 0;
  // Head only: the last depth-1 string and what followed it.
  std::string key_;
  bool key_escaped_ = false;
  enum class Head { kNone, kKey, kNodesColon } head_ = Head::kNone;
};

}  // namespace etb::trace::detail
