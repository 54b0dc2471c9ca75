// SPDX-License-Identifier: MIT
//
// Helpers for the Chakra tests: an independent frame counter (so node counts
// are checked against the file, not against our reader) and hand-built
// streams.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/trace.h"
#include "schemas/et_def.pb.h"

namespace etb::test {

// Appends a node on thread 1 under `parent` (0 = none) to a hand-built trace;
// the reference holds until the next node is added.
inline trace::Node& addNode(trace::Trace& t, trace::NodeId id, trace::NodeId parent,
                            const char* name, trace::NodeKind kind, double dur_us = -1) {
  trace::Node n;
  n.id = id;
  n.parent = parent;
  n.name = t.strings.intern(name);
  n.kind = kind;
  n.tid = 1;
  n.dur_us = dur_us;
  t.nodes.push_back(n);
  return t.nodes.back();
}

// The tests' one reader of Chakra's framing (varint32-length-delimited
// messages), independent of core/chakra: the message at *pos, then *pos
// past it. False at the end, or with *error saying where the framing broke
// (a length prefix cut off, a message running past the end).
inline bool nextFramed(std::string_view bytes, size_t* pos, std::string_view* msg,
                       std::string* error) {
  error->clear();
  if (*pos >= bytes.size()) return false;
  uint64_t len = 0;
  for (int shift = 0;; shift += 7) {
    if (*pos >= bytes.size() || shift > 28) {
      *error = "length prefix cut off at byte " + std::to_string(*pos);
      return false;
    }
    const uint8_t c = static_cast<uint8_t>(bytes[(*pos)++]);
    len |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) break;
  }
  if (len > bytes.size() - *pos) {
    *error = "message of " + std::to_string(len) + " bytes runs past the end";
    return false;
  }
  *msg = bytes.substr(*pos, len);
  *pos += len;
  return true;
}

// Number of framed messages in `bytes`; -1 if the framing is broken.
inline int64_t countFramedMessages(const std::string& bytes) {
  size_t pos = 0;
  int64_t count = 0;
  std::string_view msg;
  std::string error;
  while (nextFramed(bytes, &pos, &msg, &error)) ++count;
  return error.empty() ? count : -1;
}

// The Nodes of a Chakra stream (GlobalMetadata first, then Nodes), each
// parsed by protobuf alone; a test failure for broken framing or a message
// that is no Node.
inline std::vector<ChakraProtoMsg::Node> framedNodes(const std::string& bytes) {
  std::vector<ChakraProtoMsg::Node> nodes;
  size_t pos = 0;
  std::string_view msg;
  std::string error;
  for (bool first = true; nextFramed(bytes, &pos, &msg, &error); first = false) {
    if (first) continue;
    nodes.emplace_back();
    EXPECT_TRUE(nodes.back().ParseFromArray(msg.data(), static_cast<int>(msg.size())));
  }
  EXPECT_EQ(error, "");
  return nodes;
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
