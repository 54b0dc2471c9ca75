// SPDX-License-Identifier: MIT
//
// What giving memory back to the OS costs later, on this machine.
//
// A replay's heap returns memory every iteration (glibc unmaps freed blocks
// at or above its mmap threshold and trims its heap top; et_replay --heap
// match hands back a share of each reused block). The predictor charges the
// fresh pages' first touches at et_profile_hw's cost per page. On some VMs
// a release costs more than that, later and elsewhere: a while after it,
// the first touch of every page the process keeps (its parameters, its
// heap) stalls, with no page fault and no system time in the guest -
// presumably the host taking the freed memory back and rebuilding its
// mapping of the guest's. This measures it:
//
//   etb_page_release_stall [--live-mib 256] [--release-mib 32] [--tries 8]
//
// For each wait after a release (a mapping of --release-mib touched and
// unmapped, then a busy wait) it streams a long-lived buffer of --live-mib
// twice: a stall is a first pass taking over twice the second; it prints
// how often that happened and the first pass's extra time per page of the
// long-lived buffer, with the same waits without a release as the control,
// and the guest's minor faults during the first passes.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double nowMs() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

long minorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

constexpr size_t kPage = 4096;

// Touches every page of a new mapping and unmaps it; returns us per page.
double touchAndRelease(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  madvise(p, bytes, MADV_NOHUGEPAGE);  // one fault per 4 KiB page, as a heap's
  auto* c = static_cast<volatile char*>(p);
  const double t0 = nowMs();
  for (size_t i = 0; i < bytes; i += kPage) c[i] = 1;
  const double us = (nowMs() - t0) * 1e3 / static_cast<double>(bytes / kPage);
  munmap(p, bytes);
  return us;
}

double streamMs(std::vector<float>& live) {
  const double t0 = nowMs();
  for (float& x : live) x = x * 0.999f + 1.0f;
  return nowMs() - t0;
}

struct Row {
  int stalled = 0;
  std::vector<double> extra_us_per_page;  // of the stalled tries
  long faults = 0;                        // during the first passes
};

Row measure(std::vector<float>& live, size_t release_bytes, double wait_ms, int tries) {
  Row row;
  const double pages = static_cast<double>(live.size() * sizeof(float)) / kPage;
  for (int t = 0; t < tries; ++t) {
    const double t0 = nowMs();
    if (release_bytes > 0) touchAndRelease(release_bytes);
    volatile double spin = 0;  // busy, as a training step is
    while (nowMs() - t0 < wait_ms) spin = spin + 1.0;
    const long f0 = minorFaults();
    const double first = streamMs(live);
    row.faults += minorFaults() - f0;
    const double second = streamMs(live);
    if (first > 2 * second) {
      ++row.stalled;
      row.extra_us_per_page.push_back((first - second) * 1e3 / pages);
    }
  }
  return row;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

size_t flagValue(int argc, char** argv, const std::string& name, size_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (name == argv[i]) return std::strtoul(argv[i + 1], nullptr, 10);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t live_mib = flagValue(argc, argv, "--live-mib", 256);
  const size_t release_mib = flagValue(argc, argv, "--release-mib", 32);
  const int tries = static_cast<int>(flagValue(argc, argv, "--tries", 8));
  if (live_mib == 0 || release_mib == 0 || tries <= 0) {
    std::fprintf(stderr, "usage: %s [--live-mib N>0] [--release-mib N>0] [--tries N>0]\n", argv[0]);
    return 2;
  }
  std::vector<float> live(live_mib * (size_t{1} << 20) / sizeof(float), 1.0f);
  std::vector<double> touch;
  for (int i = 0; i < 3; ++i) touch.push_back(touchAndRelease(size_t{64} << 20));
  std::printf("first touch of a fresh 64 MiB mapping: %.2f us/page (median of 3)\n",
              median(touch));
  std::printf("long-lived buffer %zu MiB, release %zu MiB, %d tries per row\n", live_mib, release_mib,
              tries);
  std::printf("%-10s %8s %10s %18s %14s\n", "release", "wait_ms", "stalled", "extra_us/live_page",
              "guest_faults");
  for (const double wait : {0.0, 30.0, 100.0, 300.0, 1000.0}) {
    for (const size_t bytes : {release_mib << 20, size_t{0}}) {
      const Row r = measure(live, bytes, wait, tries);
      std::printf("%-10s %8.0f %6d/%-3d %18.2f %14ld\n",
                  bytes ? (std::to_string(release_mib) + " MiB").c_str() : "none", wait, r.stalled,
                  tries, median(r.extra_us_per_page), r.faults);
    }
  }
  return 0;
}
