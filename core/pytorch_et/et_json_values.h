// SPDX-License-Identifier: MIT
//
// Decoding of ET argument lists (values + shapes + types + strides) and attr
// values into the Trace model. Internal to the ET JSON reader.
#pragma once

#include <simdjson.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/trace.h"
#include "core/pytorch_et/et_json_sink.h"

namespace etb::trace::detail {

class ValueDecoder {
 public:
  ValueDecoder(NodeSink& sink, const std::string& file) : sink_(sink), file_(file) {}

  // Decodes one argument list. `shapes`, `types` and `strides` may be
  // null; null `strides` means "not recorded" (schemas before 1.1.1).
  // Throws InputError naming `node` on malformed tensor tuples.
  void decodeArgs(NodeId node, simdjson::dom::element values,
                  const simdjson::dom::element* shapes,
                  const simdjson::dom::element* types,
                  const simdjson::dom::element* strides,
                  std::vector<Value>* out);

  // An attr value, typed by its JSON kind; `type` is the recorded attr type.
  Value decodeAttrValue(simdjson::dom::element v, StrId type);

 private:
  // `shape` / `stride` are null when absent.
  using Elem = simdjson::dom::element;
  Value decode(Elem v, const Elem* shape, const Elem* stride, StrId type);
  Value decodeArray(simdjson::dom::array a, const Elem* shape,
                    const Elem* stride, StrId type);
  Value decodeTensor(simdjson::dom::array a, const Elem* shape,
                     const Elem* stride, StrId type);
  Value decodeString(std::string_view s, StrId type);
  ListId internInts(const Elem* e, bool* ok);
  const std::vector<StrId>& elementTypes(StrId type);
  [[noreturn]] void fail(const std::string& what);

  NodeSink& sink_;
  const std::string& file_;
  NodeId node_ = 0;
  size_t arg_ = 0;
  std::vector<int64_t> scratch_;
  std::unordered_map<StrId, std::vector<StrId>> elem_types_;
  StrId double_ = 0, device_ = 0, string_ = 0;
  bool ids_ready_ = false;
};

}  // namespace etb::trace::detail
