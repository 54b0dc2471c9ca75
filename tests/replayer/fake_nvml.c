/* SPDX-License-Identifier: MIT
 *
 * A stand-in for libnvidia-ml.so.1 with one GPU, so the sampler's dlopen,
 * symbol lookup, background sampling and averaging are tested on machines
 * without an NVIDIA driver. Utilisation alternates 40/60 % (mean 50), memory
 * in use grows by 1 GiB per call up to 8 GiB (peak 8 GiB once enough samples
 * were taken), power is a constant 250 W. */
#include <stdint.h>

typedef struct { unsigned int gpu, memory; } Util;
typedef struct { unsigned long long total, free, used; } Mem;

static int util_calls = 0;
static int mem_calls = 0;
static int device_token = 0;

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index != 0) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = &device_token;
  return 0;
}

int nvmlDeviceGetUtilizationRates(void* device, Util* u) {
  (void)device;
  u->gpu = (util_calls++ % 2) ? 60 : 40;
  u->memory = 0;
  return 0;
}

int nvmlDeviceGetMemoryInfo(void* device, Mem* m) {
  (void)device;
  unsigned long long gib = 1ull << 30;
  int step = mem_calls < 8 ? ++mem_calls : 8;
  m->total = 80 * gib;
  m->used = (unsigned long long)step * gib;
  m->free = m->total - m->used;
  return 0;
}

int nvmlDeviceGetPowerUsage(void* device, unsigned int* milliwatts) {
  (void)device;
  *milliwatts = 250000;
  return 0;
}
