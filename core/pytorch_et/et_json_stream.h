// SPDX-License-Identifier: MIT
//
// The two ways the ET JSON reader reads a document. Internal; tests call
// both to check they agree.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/model/trace.h"
#include "core/trace_io.h"

namespace etb::trace::detail {

// Where the streamed read gets its text.
struct ByteSource {
  std::function<size_t(char*, size_t)> read;  // 0 only at the end
  std::function<uint64_t()> done;            // progress: source bytes read so far
  uint64_t total = 0;                         // of `done`; 0 when unknown
};

struct StreamParams {
  size_t chunk_bytes = size_t{1} << 20;  // nodes text parsed per simdjson DOM
  size_t block_bytes = size_t{1} << 18;  // read per call
  unsigned threads = 0;                  // parsing threads; 0 = one per core
  bool simd = true;                      // false: byte-by-byte scan (tests)
};

// Streams the "nodes" array through simdjson a chunk at a time on
// `threads` threads, interning as it goes, without holding the text.
// nullopt when the whole-document read must decide instead: invalid JSON
// (it may be repairable), an unusual layout, or an error in a node (the
// whole read reports it with its line). Source errors (gzip) propagate.
std::optional<Trace> readStreamed(const ByteSource& src, const std::string& name, const ReadOptions& options,
                                  const StreamParams& params);

// One DOM of the whole document, with the repair pass for malformed JSON.
Trace readWhole(std::string text, const std::string& name, const ReadOptions& options);

// The parameters readEtJson uses for a source of `total` bytes: small
// inputs still get several chunks, so every test exercises the cuts.
StreamParams streamParamsFor(uint64_t total, const ReadOptions& options);

}  // namespace etb::trace::detail
