// SPDX-License-Identifier: MIT
#pragma once

#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>

namespace etb::predict {

// Counts the ATen ops that run while it is alive (a global RecordFunction
// callback): the evidence that a prediction executed nothing of the trace.
class AtenCallCounter {
 public:
  AtenCallCounter();
  ~AtenCallCounter();
  AtenCallCounter(const AtenCallCounter&) = delete;
  AtenCallCounter& operator=(const AtenCallCounter&) = delete;
  uint64_t calls() const;

 private:
  at::CallbackHandle handle_;
  uint64_t start_;
};

}  // namespace etb::predict
