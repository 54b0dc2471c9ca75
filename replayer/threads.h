// SPDX-License-Identifier: MIT
#pragma once

namespace etb::replay {

// Sets the intra-op thread count everywhere a CPU kernel can pick one up:
// ATen's pool (OpenMP) and the BLAS library's own pool. at::set_num_threads
// alone leaves a pthread OpenBLAS (Debian's libopenblas0-pthread) on all
// cores, so `--threads 1` would still run GEMMs on every core. Returns the
// BLAS library that was also limited ("openblas", "" when none was found).
const char* setIntraOpThreads(int threads);

}  // namespace etb::replay
