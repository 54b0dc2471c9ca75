// SPDX-License-Identifier: MIT
#include "replayer/heap_match.h"
#include "replayer/system_metrics.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace etb::replay {
namespace {

// A binary search over heapThresholds() (21 sizes) ends in 5 probes; each
// runs one iteration to let the heap settle at its threshold and counts two.
// Faults come in bursts (a trim, then the heap grows back over the next
// iterations): one iteration alone read 0 where twenty averaged 870. Glibc's
// own thresholds still move in the first iterations (each free of a mapped
// chunk raises them): two settle, four count, and three count the choice.
constexpr int kStartSettle = 2;
constexpr int kStartCounted = 4;
constexpr int kProbes = 5;
constexpr int kSettle = 1;
constexpr int kCounted = 2;
constexpr int kFinalCounted = 3;
// glibc's threshold: its default, its adjustment's ceiling (64-bit), and
// the finer steps by which the match reads its own.
constexpr double kInitialThreshold = 128.0 * 1024;
constexpr size_t kMmapMax = size_t{32} << 20;
constexpr double kEighthOctave = 1.0905077326652577;  // 2^(1/8)
// Below this share of an iteration, what the fault counts part by is left as
// it is: a fixed threshold is not free either (glibc stops adapting).
constexpr double kWorthShare = 0.03;

// Faults per iteration over `counted` runs after `settle` uncounted ones.
double countFaults(const std::function<void()>& run_iteration, int settle, int counted) {
  for (int i = 0; i < settle; ++i) run_iteration();
  const uint64_t before = processMinorFaults();
  for (int i = 0; i < counted; ++i) run_iteration();
  return static_cast<double>(processMinorFaults() - before) / counted;
}

double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool setThresholds(size_t mmap_threshold) {
#if defined(__GLIBC__)
  // Setting either turns glibc's dynamic adjustment off, so the pair stays
  // as set: the trim threshold at twice the mmap one, where glibc's own
  // adjustment puts it.
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * mmap_threshold)) == 1;
#else
  (void)mmap_threshold;
  return false;
#endif
}

size_t pageRound(double bytes) {
  return static_cast<size_t>(std::ceil(bytes / 4096)) * 4096;
}

void runPlain(const std::function<void()>& run_iteration, int iterations) {
  for (int i = 0; i < iterations; ++i) run_iteration();
}

}  // namespace

namespace detail {

bool worthMatching(double faults, double target, double fault_us, double iteration_us) {
  return std::fabs(faults - target) * fault_us >= kWorthShare * iteration_us;
}

double measureFaultCostUs() {
  constexpr size_t kBytes = size_t{8} << 20;
  double best = -1;
  for (int round = 0; round < 3; ++round) {
    void* mem = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return -1;
    madvise(mem, kBytes, MADV_NOHUGEPAGE);  // one fault per 4 KiB page, as the heap's
    auto* bytes = static_cast<volatile unsigned char*>(mem);
    const double t0 = nowUs();
    for (size_t i = 0; i < kBytes; i += 4096) bytes[i] = 1;
    const double us = (nowUs() - t0) / (kBytes / 4096.0);
    munmap(mem, kBytes);
    best = best < 0 ? us : std::min(best, us);
  }
  return best;
}

std::vector<size_t> heapThresholds() {
  // Steps of sqrt(2), rounded to 4 KiB pages.
  std::vector<size_t> sizes;
  for (int i = 0; i <= 20; ++i) {
    const double s = 32.0 * 1024 * std::pow(2.0, i / 2.0);
    sizes.push_back(static_cast<size_t>(std::llround(s / 4096)) * 4096);
  }
  return sizes;
}

}  // namespace detail

namespace {
// The probe proper, in the calling thread's arena. Its blocks stay live
// until the end, so no freed one leaves a top chunk that serves the next.
double probeInThisArena(double step) {
  double found = 0;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  std::vector<void*> blocks;
  blocks.reserve(128);
  for (double s = kInitialThreshold; s <= kMmapMax * 1.01; s *= step) {
    const size_t before = mallinfo2().hblkhd;
    blocks.push_back(std::malloc(static_cast<size_t>(s)));
    if (mallinfo2().hblkhd > before) {
      found = s;
      break;
    }
  }
  for (void* b : blocks) std::free(b);
#else
  (void)step;
#endif
  return found;
}
}  // namespace

double probeMmapThreshold(double step) {
  // glibc serves a request from a free chunk that fits before it thinks of
  // mapping one, whatever its size: in a heap with large free chunks (a
  // replay's, between iterations) a probe there reads a threshold far above
  // glibc's (resnet18: 13.8 MiB, where fixing it there faulted 0 times per
  // iteration against glibc's own 13,936). The thresholds are the
  // process's, the free chunks an arena's: the probe runs in a thread with
  // an arena of its own. A thread takes the arena of an exited one first
  // (the trace reader's): a second thread holds that one meanwhile.
  std::mutex mu;
  std::condition_variable cv;
  bool holding = false, done = false;
  std::thread holder([&] {
    void* volatile p = std::malloc(64);  // attaches this thread to an arena
    std::unique_lock<std::mutex> lock(mu);
    holding = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done; });
    std::free(p);
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return holding; });
  }
  double found = 0;
  std::thread prober([&] { found = probeInThisArena(step); });
  prober.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  holder.join();
  return found;
}

int heapMatchIterations() {
  return kStartSettle + kStartCounted + kProbes * (kSettle + kCounted) + kSettle + kFinalCounted;
}

HeapMatch matchHeapFaults(double target, const std::function<void()>& run_iteration) {
  HeapMatch m;
  m.target_faults = target;
  const double t0 = nowUs();
  m.start_faults = countFaults(run_iteration, kStartSettle, kStartCounted);
  m.iteration_ms = (nowUs() - t0) / 1e3 / (kStartSettle + kStartCounted);
  m.fault_us = detail::measureFaultCostUs();
  const int left = heapMatchIterations() - kStartSettle - kStartCounted;
#if !defined(__GLIBC__)
  m.note = "not glibc's malloc: its thresholds cannot be set";
  runPlain(run_iteration, left);
  return m;
#endif
  if (target < 0) {
    m.note = "the original's faults per step are unknown (no minor_faults_per_step in its metrics)";
    runPlain(run_iteration, left);
    return m;
  }
  if (!detail::worthMatching(m.start_faults, target, m.fault_us, m.iteration_ms * 1e3)) {
    m.note = "glibc's own thresholds fault within 3% of an iteration's time of the original";
    m.faults = m.start_faults;
    runPlain(run_iteration, left);
    return m;
  }
  // glibc's own threshold, fixed where it stands (the probe's finer steps:
  // 2^(1/8)), is the first probe and the one kept unless another comes
  // nearer; the rest search the ladder on the side the original lies on.
  const double own = probeMmapThreshold(kEighthOctave);
  m.glibc_threshold = own > 0 ? pageRound(own) : kMmapMax;
  bool accepted = setThresholds(m.glibc_threshold);
  m.probes.push_back({m.glibc_threshold, countFaults(run_iteration, kSettle, kCounted)});
  std::vector<size_t> side;
  const bool fewer = m.probes.front().faults > m.target_faults;  // a larger threshold keeps more
  for (size_t s : detail::heapThresholds()) {
    if (fewer ? s > m.glibc_threshold : s < m.glibc_threshold) side.push_back(s);
  }
  size_t lo = 0, hi = side.empty() ? 0 : side.size() - 1;
  for (int p = 1; p < kProbes; ++p) {
    const size_t mid = (lo + hi) / 2;
    const auto probed = [&](const HeapMatch::Probe& q) { return q.mmap_threshold == side[mid]; };
    const bool seen = side.empty() || std::any_of(m.probes.begin(), m.probes.end(), probed);
    if (seen) {  // the search has closed: the iterations still run
      runPlain(run_iteration, kSettle + kCounted);
      continue;
    }
    accepted = setThresholds(side[mid]) && accepted;
    const double f = countFaults(run_iteration, kSettle, kCounted);
    m.probes.push_back({side[mid], f});
    if (f > target) lo = std::min(mid + 1, hi);
    else hi = mid;
  }
  const HeapMatch::Probe* best = &m.probes.front();
  for (const HeapMatch::Probe& p : m.probes) {
    if (std::fabs(p.faults - target) < std::fabs(best->faults - target)) best = &p;
  }
  accepted = setThresholds(best->mmap_threshold) && accepted;
  m.faults = countFaults(run_iteration, kSettle, kFinalCounted);
  if (accepted) {
    m.mmap_threshold = best->mmap_threshold;
    // A count at one threshold follows the heap's layout, which the probes
    // before it left: the final one can part from its probe's. glibc's own
    // adjustment cannot be had back; the report says so.
    if (std::fabs(m.faults - target) > std::fabs(m.start_faults - target)) {
      m.note = "the chosen threshold faulted further from the original than glibc's own once set "
               "(the heap the probes left differs from the one they measured)";
    }
  } else {
    m.note = "mallopt refused a threshold: the heap's are not known";
  }
  return m;
}

}  // namespace etb::replay
