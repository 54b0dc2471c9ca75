// SPDX-License-Identifier: MIT
#include "predictor/aten_call_counter.h"

namespace etb::predict {
namespace {
std::atomic<uint64_t>& total() {
  static std::atomic<uint64_t> n{0};
  return n;
}
}  // namespace

AtenCallCounter::AtenCallCounter() : start_(total().load()) {
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(
      [](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> {
        total().fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      }));
}

AtenCallCounter::~AtenCallCounter() { at::removeCallback(handle_); }

uint64_t AtenCallCounter::calls() const { return total().load() - start_; }

}  // namespace etb::predict
