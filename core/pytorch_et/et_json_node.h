// SPDX-License-Identifier: MIT
//
// Decodes one ET node (a simdjson DOM object) and the document header.
// Shared by the whole-document and the streamed read. Internal.
#pragma once

#include <simdjson.h>

#include <string>

#include "core/base/error.h"
#include "core/model/trace.h"
#include "core/pytorch_et/et_json_sink.h"
#include "core/pytorch_et/et_json_values.h"

namespace etb::trace::detail {

// dom::array::size() saturates at 2^24 - 1; counts past that by walking.
size_t countOf(simdjson::dom::array a);

// Reads schema, pid, time, start_ts and finish_ts into `t` and returns the
// "nodes" array. Throws InputError for a top level that is not an ET.
simdjson::dom::array readHeader(simdjson::dom::element root, Trace& t);

class NodeReader {
 public:
  NodeReader(NodeSink& sink, const std::string& file) : sink_(sink), file_(file), dec_(sink, file) {
    loc_.file = file;
  }

  // `index` (the node's place in the array) is only used in messages.
  void read(simdjson::dom::element e, size_t index, Node* n);

 private:
  using Elem = simdjson::dom::element;
  // One argument block: values plus the parallel shapes/types/strides.
  struct Args {
    const Elem* values = nullptr;
    const Elem* shapes = nullptr;
    const Elem* types = nullptr;
    const Elem* strides = nullptr;
    Elem v, sh, ty, st;
  };

  // The node's location for a message (its name copied only then).
  const SourceLoc& loc();
  uint64_t uintField(std::string_view key, const Elem& v);
  void field(std::string_view key, Elem v, Node* n, Args* in, Args* out);
  void argsBlock(std::string_view key, Elem v, Args* a);
  bool known(std::string_view key, const Elem& v, Node* n);
  void attrs(Elem v, Node* n);

  NodeSink& sink_;
  const std::string& file_;
  ValueDecoder dec_;
  SourceLoc loc_;
  std::string_view name_;  // into the parser's DOM, valid while reading
};

}  // namespace etb::trace::detail
