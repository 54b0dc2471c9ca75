// SPDX-License-Identifier: MIT
#include "replayer/fork_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace etb::replay {
namespace {

struct Mapping {
  uintptr_t lo = 0, hi = 0;
};

// Private writable mappings, read whole before any is touched (touching may
// allocate, and the file is generated as it is read).
std::vector<Mapping> privateWritableMappings() {
  std::vector<Mapping> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) != 3) continue;
    if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p') continue;
    if (line.find(" /dev/") != std::string::npos) continue;  // a driver's memory
    out.push_back({lo, hi});
  }
  return out;
}

}  // namespace

size_t ownPagesAfterFork() {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident;
  size_t touched = 0;
  for (const Mapping& m : privateWritableMappings()) {
    const size_t pages = (m.hi - m.lo) / page;
    resident.assign(pages, 0);
    // Only pages in memory: touching the others would make them resident.
    if (mincore(reinterpret_cast<void*>(m.lo), m.hi - m.lo, resident.data()) != 0) continue;
    for (size_t i = 0; i < pages; ++i) {
      if ((resident[i] & 1) == 0) continue;
      auto* p = reinterpret_cast<unsigned char*>(m.lo + i * page);
      __atomic_fetch_add(p, static_cast<unsigned char>(0), __ATOMIC_RELAXED);
      ++touched;
    }
  }
  return touched;
}

}  // namespace etb::replay
