// SPDX-License-Identifier: MIT
#include "replayer/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

namespace etb::replay {

const char* setIntraOpThreads(int threads) {
  at::set_num_threads(threads);
  // Looked up at run time: which BLAS libtorch ends up with is a packaging
  // choice (Debian's alternatives), not something we link against.
  using SetThreads = void (*)(int);
  if (auto* fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(threads);
    return "openblas";
  }
  return "";
}

}  // namespace etb::replay
