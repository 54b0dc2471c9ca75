// SPDX-License-Identifier: MIT
#include "tests/test_util.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

namespace etb::test {
namespace fs = std::filesystem;
namespace {
std::vector<std::string>& tempDirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
void removeTempDirs() {
  std::error_code ec;
  for (const auto& d : tempDirs()) fs::remove_all(d, ec);
}
}  // namespace

std::string sharedTracesDir() {
  const char* env = std::getenv("ETB_SHARED_TRACES");
  const std::string dir = env != nullptr ? env : ETB_SHARED_TRACES;
  return fs::is_directory(dir) ? fs::canonical(dir).string() : std::string();
}

std::string makeTempDir(const std::string& tag) {
  static std::once_flag once;
  // Construct the list before registering the handler: exit runs handlers
  // and static destructors in reverse order, so the list outlives the handler.
  std::call_once(once, [] {
    tempDirs();
    std::atexit(removeTempDirs);
  });
  std::string templ = (fs::temp_directory_path() / ("etb_" + tag + "_XXXXXX")).string();
  char* made = mkdtemp(templ.data());
  if (made == nullptr) return "";
  tempDirs().push_back(made);
  return made;
}

std::vector<std::string> listFiles(const std::string& dir,
                                   const std::vector<std::string>& suffixes) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string p = e.path().string();
    for (const auto& s : suffixes) {
      if (p.size() >= s.size() && p.compare(p.size() - s.size(), s.size(), s) == 0) {
        out.push_back(p);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> extractArchive(const std::string& archive) {
  static std::map<std::string, std::vector<std::string>> cache;
  auto it = cache.find(archive);
  if (it != cache.end()) return it->second;
  const std::string dir = makeTempDir("archive");
  std::string out;
  if (runCommand("tar -xf '" + archive + "' -C '" + dir + "'", &out) != 0) return {};
  std::vector<std::string> files = listFiles(dir, {""});
  cache[archive] = files;
  return files;
}

int runCommand(const std::string& cmd, std::string* output) {
  output->clear();
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) output->append(buf.data(), n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace etb::test
