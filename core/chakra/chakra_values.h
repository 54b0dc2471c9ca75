// SPDX-License-Identifier: MIT
//
// Node inputs/outputs <-> Chakra IOInfo strings. Upstream stores the Python
// str() of the ET lists (values, shapes, types); we write the same so that
// Chakra's tools read our files, plus two optional attrs that make the trip
// exact: strides (absent from IOInfo) and, only when the values alone are
// ambiguous, a tree of value kinds and types.
#pragma once

#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::trace::chakra {

struct IoText {
  std::string values;
  std::string shapes;
  std::string types;
  std::string strides;  // "" when no tensor records strides
  std::string tree;     // "" unless needed to decode exactly
};

// Renders values. Sets `tree` only when decoding the plain strings would not
// give back exactly `values` (checked by decoding them).
IoText encodeIo(const Trace& trace, const std::vector<Value>& values);

// Parses IOInfo strings back into values (tensors appended to trace.tensors).
// Returns false, leaving *out empty, when the strings do not parse.
bool decodeIo(Trace& trace, const IoText& text, std::vector<Value>* out);

// The [kind, 'type', [children]] tree of one value, as a Python literal.
std::string treeOf(const Trace& trace, const Value& value);

// Deep equality of two values that may live in different traces.
bool sameValue(const Trace& ta, const Value& a, const Trace& tb, const Value& b);

}  // namespace etb::trace::chakra
