// SPDX-License-Identifier: MIT
#pragma once

#include <string>

#include "core/model/trace.h"

namespace etb::trace {

// Serialises in the PyTorch ET 1.1.1 attrs layout (inputs/outputs with
// values, shapes, types, strides). Reading the result gives back the same
// nodes, values, attributes, process groups and comm info.
std::string writeEtJsonText(const Trace& trace);
void writeEtJson(const Trace& trace, const std::string& path);  // .gz aware

}  // namespace etb::trace
