// SPDX-License-Identifier: MIT
#pragma once

#include <string>

#include "core/model/trace.h"

namespace etb::trace {

// Writes a Chakra .et stream that ASTRA-sim's feeder and Chakra's Python
// tools accept: GlobalMetadata with both `version` and a `schema` attr, no
// empty messages, no dependency on a missing node, no self-dependency.
std::string writeChakraBytes(const Trace& trace);
void writeChakra(const Trace& trace, const std::string& path);  // .gz aware

}  // namespace etb::trace
