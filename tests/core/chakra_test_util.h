// SPDX-License-Identifier: MIT
//
// Helpers for the Chakra tests: an independent frame counter (so node counts
// are checked against the file, not against our reader) and hand-built
// streams.
#pragma once

#include <cstdint>
#include <string>

#include "schemas/et_def.pb.h"

namespace etb::test {

// Number of varint32-length-delimited messages in `bytes`; -1 if the framing
// is broken.
inline int64_t countFramedMessages(const std::string& bytes) {
  size_t pos = 0;
  int64_t count = 0;
  while (pos < bytes.size()) {
    uint64_t len = 0;
    int shift = 0;
    while (true) {
      if (pos >= bytes.size() || shift > 28) return -1;
      const uint8_t c = static_cast<uint8_t>(bytes[pos++]);
      len |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) break;
      shift += 7;
    }
    if (len > bytes.size() - pos) return -1;
    pos += len;
    ++count;
  }
  return count;
}

inline void appendFramed(std::string* out, const google::protobuf::Message& m) {
  std::string body = m.SerializeAsString();
  uint64_t len = body.size();
  while (len >= 0x80) {
    out->push_back(static_cast<char>((len & 0x7f) | 0x80));
    len >>= 7;
  }
  out->push_back(static_cast<char>(len));
  *out += body;
}

}  // namespace etb::test
