// SPDX-License-Identifier: MIT
//
// libFuzzer target: PyTorch ET JSON bytes -> readEtJsonText. InputError is
// the expected answer to bad input; anything else escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/error.h"
#include "core/pytorch_et/et_json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    etb::trace::Trace trace = etb::trace::readEtJsonText(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    // Touch what the tools touch after a read, so a broken model is caught.
    (void)trace.memoryBytes();
    (void)trace.children();
  } catch (const etb::InputError&) {
  }
  return 0;
}
