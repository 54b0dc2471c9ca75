// SPDX-License-Identifier: MIT
#include "core/base/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "core/base/error.h"

namespace etb {
namespace {
LogLevel initialLevel() {
  LogLevel level = LogLevel::kInfo;
  const char* env = std::getenv("ETB_LOG_LEVEL");
  if (env != nullptr) parseLogLevel(env, &level);
  return level;
}

std::atomic<int>& levelRef() {
  static std::atomic<int> level{static_cast<int>(initialLevel())};
  return level;
}

std::atomic<int> gRank{-1};

// "core/model/trace.cc" rather than the absolute build path.
const char* shortPath(const char* file) {
  for (const char* root : {"/core/", "/replayer/", "/generator/", "/composer/",
                           "/tools/", "/tests/", "/benchmarks/"}) {
    const char* at = std::strstr(file, root);
    if (at != nullptr) return at + 1;
  }
  return file;
}
}  // namespace

std::string formatLoc(const SourceLoc& loc) {
  std::string out;
  if (!loc.file.empty()) {
    out += loc.file;
    if (loc.line > 0) out += ":" + std::to_string(loc.line);
    out += ": ";
  }
  if (loc.node_id != SourceLoc::kNoNode) {
    out += "node " + std::to_string(loc.node_id);
    if (!loc.node_name.empty()) out += " \"" + loc.node_name + "\"";
    out += ": ";
  }
  return out;
}

void setLogLevel(LogLevel level) { levelRef() = static_cast<int>(level); }
LogLevel logLevel() { return static_cast<LogLevel>(levelRef().load()); }
void setLogRank(int rank) { gRank = rank; }

bool parseLogLevel(const char* text, LogLevel* out) {
  static const std::pair<const char*, LogLevel> kNames[] = {
      {"debug", LogLevel::kDebug},
      {"info", LogLevel::kInfo},
      {"warn", LogLevel::kWarn},
      {"error", LogLevel::kError}};
  for (const auto& [name, level] : kNames) {
    if (std::strcmp(text, name) == 0) {
      *out = level;
      return true;
    }
  }
  return false;
}

namespace detail {
LogLine::LogLine(LogLevel level, const char* file, int line) {
  static const char kTag[] = {'D', 'I', 'W', 'E'};
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char clock[16];
  std::strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
  os_ << kTag[static_cast<int>(level)] << ' ' << clock << ' ';
  if (gRank >= 0) os_ << 'r' << gRank << ' ';
  os_ << shortPath(file) << ':' << line << "] ";
}

LogLine::~LogLine() {
  os_ << '\n';
  const std::string text = os_.str();
  std::fwrite(text.data(), 1, text.size(), stderr);
}
}  // namespace detail
}  // namespace etb
