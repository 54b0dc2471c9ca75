// SPDX-License-Identifier: MIT
//
// A one-line progress bar for long reads and conversions. It draws only on a
// terminal: piped or redirected output stays clean (scripts, tests, CI).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

namespace etb {

class ProgressBar {
 public:
  // Draws on `out`; nullptr draws nothing (every call is then a no-op).
  ProgressBar(std::string label, std::ostream* out);
  // Draws on std::cerr when stderr is a terminal, otherwise nothing.
  static ProgressBar onTerminal(std::string label);
  ~ProgressBar();

  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ProgressBar(ProgressBar&&) = default;

  // Redraws at most ~10 times a second, and always at 100%.
  void update(size_t done, size_t total);
  // Clears the line (so later output starts clean); idempotent.
  void finish();
  // A callback for ReadOptions::progress. The bar must outlive it and must
  // not move while it is in use.
  std::function<void(size_t, size_t)> callback();

  bool enabled() const { return out_ != nullptr; }

 private:
  void draw(size_t done, size_t total);

  std::string label_;
  std::ostream* out_;
  std::chrono::steady_clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace etb
