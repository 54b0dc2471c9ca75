// SPDX-License-Identifier: MIT
#pragma once

#include <sstream>

namespace etb {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Process-wide settings. The level comes from ETB_LOG_LEVEL (debug, info,
// warn, error) unless setLogLevel() is called; the rank is printed on every
// line because mpirun interleaves the ranks' stderr.
void setLogLevel(LogLevel level);
LogLevel logLevel();
void setLogRank(int rank);
// Parses "debug", "info", "warn", "error"; returns false on anything else.
bool parseLogLevel(const char* text, LogLevel* out);

namespace detail {
// Buffers one log line and writes it to stderr in one call when destroyed.
class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  std::ostream& stream() { return os_; }

 private:
  std::ostringstream os_;
};
}  // namespace detail
}  // namespace etb

#define ETB_LOG_ENABLED(level) \
  (::etb::LogLevel::level >= ::etb::logLevel())

// ETB_LOG(kWarn) << "text";  Prefix: "W 12:01:07 r3 core/x.cc:88] ".
#define ETB_LOG(level)                \
  if (!ETB_LOG_ENABLED(level)) {      \
  } else                              \
    ::etb::detail::LogLine(::etb::LogLevel::level, __FILE__, __LINE__).stream()
