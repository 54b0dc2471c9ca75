// SPDX-License-Identifier: MIT
#pragma once

namespace etb::replay {

// Sets the intra-op thread count everywhere a CPU kernel can pick one up:
// ATen's pool (OpenMP) and the BLAS library's own pool. at::set_num_threads
// alone leaves a pthread OpenBLAS (Debian's libopenblas0-pthread) on all
// cores, so `--threads 1` would still run GEMMs on every core. Returns the
// BLAS library that was also limited ("openblas", "" when none was found).
const char* setIntraOpThreads(int threads);

// Flushes denormal floats to zero (and reads them as zero) on the calling
// thread and ATen's intra-op threads, or stops (x86 FTZ/DAZ; elsewhere what
// at::Context supports). A replay computes on drawn values, not the
// original's: its gradients can shrink into the denormal range where the
// CPU takes a microcoded path, 10-100x slower (a 136x64x128 mm on 1e-20
// inputs: 5.9 ms against 46 us), a cost the original need not have paid and
// a prediction cannot see. Returns whether the CPU supports it. BLAS
// libraries' own threads keep their setting.
bool setFlushDenormal(bool on);

}  // namespace etb::replay
