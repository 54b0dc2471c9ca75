// SPDX-License-Identifier: MIT
#include "replayer/threads.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#ifdef _OPENMP
#include <omp.h>
#endif
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

bool setFlushDenormal(bool on) {
  const bool ok = at::globalContext().setFlushDenormal(on);
  // ATen's OpenMP threads: a team as large as the pool runs on them (GNU
  // OpenMP keeps one pool per process). at::parallel_for would not do: its
  // OpenMP region is a header template, serial in code built without
  // OpenMP. Threads made later inherit the calling thread's setting.
#ifdef _OPENMP
#pragma omp parallel num_threads(at::get_num_threads())
  { at::globalContext().setFlushDenormal(on); }
#endif
  return ok;
}

}  // namespace etb::replay
