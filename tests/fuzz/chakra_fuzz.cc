// SPDX-License-Identifier: MIT
//
// libFuzzer target: Chakra .et bytes -> readChakraBytes. InputError is the
// expected answer to bad input; anything else escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/error.h"
#include "core/chakra/chakra_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    etb::trace::Trace trace = etb::trace::readChakraBytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.et");
    (void)trace.memoryBytes();
    (void)trace.children();
  } catch (const etb::InputError&) {
  }
  return 0;
}
