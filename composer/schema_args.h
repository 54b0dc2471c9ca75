// SPDX-License-Identifier: MIT
//
// Which of an op's arguments are of some kind, by its schema: the recorded
// trace writes ScalarType, Layout, MemoryFormat and dimension arguments as
// plain Ints, so edits that rewrite Ints (a dtype change, a size
// substitution) must know which ones they are.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <functional>
#include <map>
#include <vector>

#include "core/model/trace.h"
#include "replayer/arg_decoder.h"

namespace etb::compose {

// The kind of an argument's declared type, an Optional unwrapped
// (Argument::type() says int for ScalarType; this reads real_type()).
inline c10::TypeKind realKind(const c10::Argument& a) {
  c10::TypePtr type = a.real_type();
  if (type->kind() == c10::TypeKind::OptionalType) type = type->castRaw<c10::OptionalType>()->getElementType();
  return type->kind();
}

// Positions of the arguments `pick` selects in a node's op schema, found
// through the dispatcher and cached per schema string; none when the node
// has no schema or this libtorch lacks the op.
class SchemaArgs {
 public:
  explicit SchemaArgs(std::function<bool(const c10::Argument&)> pick) : pick_(std::move(pick)) {}

  const std::vector<size_t>& of(const trace::Trace& t, const trace::Node& n) {
    auto [it, fresh] = cache_.try_emplace(n.op_schema);
    if (!fresh || n.op_schema == 0) return it->second;
    std::string name, overload;
    if (!replay::detail::parseSchemaName(t.str(n.op_schema), &name, &overload)) return it->second;
    auto op = c10::Dispatcher::singleton().findSchema({name, overload});
    if (!op) return it->second;
    const auto& args = op->schema().arguments();
    for (size_t i = 0; i < args.size(); ++i) {
      if (pick_(args[i])) it->second.push_back(i);
    }
    return it->second;
  }

 private:
  std::function<bool(const c10::Argument&)> pick_;
  std::map<trace::StrId, std::vector<size_t>> cache_;
};

}  // namespace etb::compose
