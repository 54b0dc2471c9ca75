// SPDX-License-Identifier: MIT
#include "core/base/progress.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <utility>

#include "core/base/file_io.h"

namespace etb {
namespace {
constexpr int kWidth = 30;
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

std::string humanBytes(size_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}
}  // namespace

ProgressBar::ProgressBar(std::string label, std::ostream* out)
    : label_(std::move(label)), out_(out) {}

ProgressBar ProgressBar::onTerminal(std::string label) {
  return ProgressBar(std::move(label), stderrIsTerminal() ? &std::cerr : nullptr);
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(size_t done, size_t total) {
  if (out_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  const bool complete = total > 0 && done >= total;
  // Throttled: a byte-level callback can fire millions of times.
  if (!complete && drawn_ && now - last_ < kRedrawEvery) return;
  last_ = now;
  draw(done, total);
}

void ProgressBar::draw(size_t done, size_t total) {
  const double frac =
      total == 0 ? 0.0 : std::min(1.0, static_cast<double>(done) / total);
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(filled, '#');
  bar.append(kWidth - filled, ' ');
  char pct[16];
  std::snprintf(pct, sizeof(pct), "%3d%%", static_cast<int>(frac * 100));
  *out_ << "\r" << label_ << " [" << bar << "] " << pct << "  " << humanBytes(done)
        << " / " << humanBytes(total) << "\x1b[K" << std::flush;
  drawn_ = true;
}

void ProgressBar::finish() {
  if (out_ == nullptr || !drawn_) return;
  *out_ << "\r\x1b[K" << std::flush;  // erase the bar line
  drawn_ = false;
}

std::function<void(size_t, size_t)> ProgressBar::callback() {
  if (out_ == nullptr) return nullptr;  // readers skip the work when null
  return [this](size_t done, size_t total) { update(done, total); };
}

}  // namespace etb
