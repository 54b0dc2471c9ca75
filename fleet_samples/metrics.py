# SPDX-License-Identifier: MIT
"""The original's system metrics, written beside a fleet sample as <name>.metrics.json.

et_replay reads this sidecar (--original-metrics FILE, or <stem>.metrics.json beside the trace)
and prints it next to the replay's own figures. The definitions match the replay's
(replayer/system_metrics.h): CPU utilisation is process CPU time (user + system, all threads)
over wall time of the timed steps, so 100% is one busy core; peak RSS is the process's lifetime
high-water mark; GPU figures are NVML's (mean utilisation, peak memory used, mean power).
"""
import gzip
import json
import os
import resource
import threading
import time

SCHEMA = "etbench.metrics/1"


def _osThreads():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def setThreads(torch, threads):
    """torch.set_num_threads and the same limit on a pthread OpenBLAS, which ignores torch's
    setting and runs GEMMs on every core (Debian's libopenblas0-pthread): without it a
    `--threads 1` original times its GEMMs on two cores of a 2-core machine (gpt: 31.4 ms a
    step at 197% CPU against 37.7 ms at 100%), while et_replay --threads 1 limits OpenBLAS too
    (replayer/threads.cc). Returns the BLAS library limited ("openblas", "" when none)."""
    import ctypes
    torch.set_num_threads(threads)
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line and ".so" in line}
    except OSError:
        libs = set()
    for lib in sorted(libs):
        try:
            fn = ctypes.CDLL(lib).openblas_set_num_threads  # already loaded: the same handle
        except (OSError, AttributeError):
            continue
        fn(ctypes.c_int(threads))
        return "openblas"
    return ""


class _NvmlSampler:
    """Samples NVML every 50 ms in a thread; inert when pynvml or a GPU is missing."""

    def __init__(self, index):
        self.nvml, self.handle, self.samples = None, None, []
        try:
            import pynvml  # optional: only on GPU hosts with the binding installed
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.nvml = pynvml
        except Exception:  # no binding, no driver or no device: CPU-only metrics
            self.nvml = None
        self.stop_event = threading.Event()
        self.thread = None

    def start(self):
        if self.nvml is None:
            return
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop_event.wait(0.05):
            util = self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu
            mem = self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used
            power = self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0
            self.samples.append((util, mem, power))

    def stop(self):
        if self.thread is None:
            return None
        self.stop_event.set()
        self.thread.join()
        if not self.samples:
            return None
        n = len(self.samples)
        return {"gpu_util_pct": sum(s[0] for s in self.samples) / n,
                "gpu_mem_bytes": max(s[1] for s in self.samples),
                "gpu_power_w": sum(s[2] for s in self.samples) / n, "nvml_samples": n}


class Region:
    """Measures CPU utilisation (and NVML on a GPU) over the timed steps."""

    def __init__(self, gpu_index=0, use_gpu=False):
        self.gpu = _NvmlSampler(gpu_index) if use_gpu else None

    def __enter__(self):
        if self.gpu:
            self.gpu.start()
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        self.startFaults()
        return self

    def startFaults(self):
        """Counts page faults from here on (the first timed step: warm-up steps fault more)."""
        self.faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0
        self.minor_faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - self.faults0
        self.gpu_metrics = self.gpu.stop() if self.gpu else None
        return False


def deviceProperties(kineto_path):
    """Kineto's top-level deviceProperties (GPU builds with libkineto); None when absent."""
    if not kineto_path or not os.path.exists(kineto_path):
        return None
    opener = gzip.open if kineto_path.endswith(".gz") else open
    with opener(kineto_path, "rt") as f:
        doc = json.load(f)
    return doc.get("deviceProperties") if isinstance(doc, dict) else None


def build(region, torch_threads, window, kineto_path=None, same_process=True, steps=None):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    doc = {
        "schema": SCHEMA,
        "window": window,
        "same_process_as_trace": same_process,
        "wall_s": round(region.wall, 6),
        "cpu_s": round(region.cpu, 6),
        "cpu_util_pct": round(100.0 * region.cpu / region.wall, 2) if region.wall > 0 else None,
        # ru_maxrss is KiB on Linux
        "peak_rss_bytes": ru.ru_maxrss * 1024,
        "minor_faults_per_step": round(region.minor_faults / steps, 1) if steps else None,
        "threads": {"intra_op": torch_threads, "os_threads": _osThreads()},
        "host_cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "definitions": "cpu_util_pct = process CPU time (user+system, all threads) / wall time "
                       "of the timed steps (100 = one busy core); peak_rss_bytes = process "
                       "high-water mark (getrusage ru_maxrss) after the timed steps, before "
                       "the recording; minor_faults_per_step = page faults served without "
                       "I/O (getrusage ru_minflt, whole process) over the timed steps, per step",
    }
    if region.gpu_metrics:
        doc["gpu"] = region.gpu_metrics
    props = deviceProperties(kineto_path)
    if props:
        doc["device_properties"] = props
    return doc


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
