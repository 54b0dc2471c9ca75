// SPDX-License-Identifier: MIT
//
// The argument list of an op's recorded schema (a node's `op_schema`):
// "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
// A node's inputs follow the schema's arguments by position, keyword-only
// ones included, so a name's position is the input it names.
#pragma once

#include <string_view>
#include <vector>

namespace etb::trace {

// The names of the schema's arguments in order: the keyword-only marker `*`
// is not an argument; an alias annotation, a default or a nested type
// ("Tensor(a -> *)", "int[2] stride=[1, 1]", "(Tensor, Tensor)") does not
// split one. Empty when there is no argument list. The views point into
// `schema`.
std::vector<std::string_view> schemaArgNames(std::string_view schema);

}  // namespace etb::trace
