// SPDX-License-Identifier: MIT
#include "replayer/comm/watchdog.h"

#include <algorithm>

namespace etb::replay::comm {

Watchdog::Watchdog(double timeout_s, OnTimeout on_timeout)
    : timeout_(timeout_s), on_timeout_(std::move(on_timeout)), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::enter(std::function<std::string()> what) {
  std::lock_guard<std::mutex> lock(mu_);
  active_ = true;
  since_ = Clock::now();
  what_ = std::move(what);
}

void Watchdog::leave() {
  std::lock_guard<std::mutex> lock(mu_);
  active_ = false;
}

void Watchdog::loop() {
  // Polling at a quarter of the timeout keeps the overshoot under 25%
  // without touching the hot path beyond one mutex per call.
  const auto period = std::chrono::duration_cast<Clock::duration>(
      std::min(timeout_ / 4, std::chrono::duration<double>(1.0)));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [this] { return stop_; });
    if (stop_ || !active_) continue;
    const std::chrono::duration<double> waited = Clock::now() - since_;
    if (waited < timeout_) continue;
    const std::string what = what_ ? what_() : std::string("a communication call");
    lock.unlock();
    on_timeout_(what, waited.count());  // does not return in practice
    lock.lock();
    active_ = false;
  }
}

}  // namespace etb::replay::comm
