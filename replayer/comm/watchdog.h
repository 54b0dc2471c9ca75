// SPDX-License-Identifier: MIT
//
// Bounds the time one communication call may block (--comm-timeout): a
// thread that wakes a few times per timeout and, when the call in flight has
// run too long, hands its description to `on_timeout` (which ends the job).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace etb::replay::comm {

class Watchdog {
 public:
  using OnTimeout = std::function<void(const std::string& what, double seconds)>;
  Watchdog(double timeout_s, OnTimeout on_timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Brackets one blocking call; `what` is built lazily only on timeout.
  void enter(std::function<std::string()> what);
  void leave();

 private:
  void loop();
  using Clock = std::chrono::steady_clock;
  const std::chrono::duration<double> timeout_;
  OnTimeout on_timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool active_ = false;
  Clock::time_point since_;
  std::function<std::string()> what_;
  std::thread thread_;
};

}  // namespace etb::replay::comm
