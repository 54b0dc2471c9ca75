// SPDX-License-Identifier: MIT
#pragma once

#include <string>

#include "core/model/trace.h"
#include "core/trace_io.h"

namespace etb::trace {

// Chakra protobuf .et: varint32-length-delimited stream, GlobalMetadata
// first, then one Node per message; plain or gzip. Integer attributes are
// accepted in any integer kind.
Trace readChakra(const std::string& path, const ReadOptions& options = {});
Trace readChakraBytes(const std::string& bytes, const std::string& name,
                      const ReadOptions& options = {});

}  // namespace etb::trace
