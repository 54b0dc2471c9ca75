// SPDX-License-Identifier: MIT
#include "replayer/fresh_pages.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace etb::replay {
namespace {

// Above every other CPU allocator libtorch registers on its own (0).
constexpr uint8_t kPriority = 100;

class Wrapper final : public c10::Allocator {
 public:
  explicit Wrapper(c10::Allocator* inner) : inner_(inner) {}

  // libtorch 2.x made allocate non-const (1.13's is const) and added a pure
  // copy_data: both forms are declared, without `override`, so that this
  // builds on either.
  c10::DataPtr allocate(size_t n) const { return take(n); }
  c10::DataPtr allocate(size_t n) { return take(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const {
    if (count > 0) std::memcpy(dest, src, count);
  }
  c10::DeleterFnPtr raw_deleter() const { return &release; }

  void setShare(double share) {
    std::lock_guard<std::mutex> lock(mu_);
    share_ = std::clamp(share, 0.0, 1.0);
    carry_ = 0;
  }
  uint64_t offered() const {
    std::lock_guard<std::mutex> lock(mu_);
    return offered_;
  }
  uint64_t handedBack() const {
    std::lock_guard<std::mutex> lock(mu_);
    return handed_back_;
  }

 private:
  static size_t pageBytes() {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return page;
  }

  // The context is the data (c10::Allocator::raw_allocate, ideep's path,
  // requires it), and release() tells the large blocks by their address.
  c10::DataPtr take(size_t n) const {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n < FreshPages::kMinBytes) {
      void* p = inner_->raw_allocate(n);
      return {p, p, &release, cpu};
    }
    const size_t bytes = (n + pageBytes() - 1) / pageBytes() * pageBytes();
    void* p = nullptr;
    uint64_t back = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto kept = free_.find(bytes);
      if (kept != free_.end() && !kept->second.empty()) {
        p = kept->second.back();
        kept->second.pop_back();
      }
      const uint64_t pages = bytes / pageBytes();
      offered_ += pages;
      if (share_ > 0) {
        back = wholePagesBack(share_, pages, carry_);
        handed_back_ += back;
      }
    }
    if (p == nullptr) {
      p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      std::lock_guard<std::mutex> lock(mu_);
      sizes_[p] = bytes;
    } else if (back > 0) {
      // Its first pages: an op that writes its output in order faults at
      // its start. A fresh mapping faults on every page anyway. Freed
      // memory has no contents to keep; a failure leaves the pages as they
      // were.
      madvise(p, back * pageBytes(), MADV_DONTNEED);
    }
    return {p, p, &release, cpu};
  }

  static void release(void* p);

  c10::Allocator* inner_;
  mutable std::mutex mu_;
  double share_ = 0;
  // The fraction a block's page count leaves carries to the next block, so
  // that the pages handed back are share x pages offered, not rounded per
  // block.
  mutable double carry_ = 0;
  mutable uint64_t offered_ = 0;
  mutable uint64_t handed_back_ = 0;
  mutable std::unordered_map<void*, size_t> sizes_;               // every large block
  mutable std::unordered_map<size_t, std::vector<void*>> free_;   // freed ones, by size
};

Wrapper*& wrapper() {
  static Wrapper* w = nullptr;
  return w;
}

// A large block is kept for the next request of its size; a small one goes
// back to the allocator it came from.
void Wrapper::release(void* p) {
  if (p == nullptr) return;
  Wrapper& w = *wrapper();
  {
    std::lock_guard<std::mutex> lock(w.mu_);
    const auto it = w.sizes_.find(p);
    if (it != w.sizes_.end()) {
      w.free_[it->second].push_back(p);
      return;
    }
  }
  w.inner_->raw_deallocate(p);
}

}  // namespace

FreshPages& FreshPages::install() {
  static FreshPages self;
  static std::once_flag once;
  std::call_once(once, [] {
    // Never freed: storages made while it was in place keep a pointer to it.
    wrapper() = new Wrapper(c10::GetCPUAllocator());
    c10::SetCPUAllocator(wrapper(), kPriority);
  });
  return self;
}

void FreshPages::setShare(double share) { wrapper()->setShare(share); }
uint64_t FreshPages::pagesOffered() const { return wrapper()->offered(); }
uint64_t FreshPages::pagesHandedBack() const { return wrapper()->handedBack(); }

}  // namespace etb::replay
