// SPDX-License-Identifier: MIT
//
// Buffers for calls whose bound tensors do not match the recorded message.
// Allocated on first need and reused (a buffer is sized once), leased per
// call and returned when the call completes, so memory stays at the peak of
// calls in flight rather than one buffer per trace node.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace etb::replay::comm {

class ScratchPool {
 public:
  using Alloc = std::function<void*(size_t)>;
  using Free = std::function<void(void*)>;
  ScratchPool(Alloc alloc, Free free) : alloc_(std::move(alloc)), free_(std::move(free)) {}
  ~ScratchPool() {
    for (Buf& b : bufs_) free_(b.data);
  }
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // Returns a lease id; data(id) holds at least `bytes` bytes.
  int acquire(size_t bytes) {
    int best = -1;
    for (size_t i = 0; i < bufs_.size(); ++i) {
      const Buf& b = bufs_[i];
      if (!b.busy && b.size >= bytes && (best < 0 || b.size < bufs_[static_cast<size_t>(best)].size)) {
        best = static_cast<int>(i);
      }
    }
    if (best < 0) {
      bufs_.push_back(Buf{alloc_(bytes > 0 ? bytes : 1), bytes, false});
      best = static_cast<int>(bufs_.size() - 1);
    }
    bufs_[static_cast<size_t>(best)].busy = true;
    return best;
  }
  void* data(int id) const { return bufs_[static_cast<size_t>(id)].data; }
  void release(int id) {
    if (id >= 0) bufs_[static_cast<size_t>(id)].busy = false;
  }
  size_t totalBytes() const {
    size_t n = 0;
    for (const Buf& b : bufs_) n += b.size;
    return n;
  }

 private:
  struct Buf {
    void* data;
    size_t size;
    bool busy;
  };
  Alloc alloc_;
  Free free_;
  std::vector<Buf> bufs_;
};

}  // namespace etb::replay::comm
