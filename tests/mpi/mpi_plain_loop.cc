// SPDX-License-Identifier: MIT
//
// The baseline for scripts/bench_comm_replay.sh: the call sequence of the
// benchmark trace (tests/mpi/make_comm_et.py bench) as a plain MPI loop on
// host buffers, timed per call the way et_replay's MPI backend times it
// (post to completion, no barrier between calls), median over the measured
// iterations on rank 0. nccl-tests definitions: algbw = bytes / time; busbw
// = algbw * 2(n-1)/n for all_reduce, (n-1)/n for all_to_all.
//   etb_mpi_plain_loop --mb 16 64 --calls K --warmup W --iters N [--distinct]
// Prints one line per collective and size: type bytes time_us busbw_gbps.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

double nowUs() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Args {
  std::vector<double> mbs;
  int calls = 1, warmup = 1, iters = 3;
  bool distinct = false;  // each call of a size and type has its own buffers
};

Args parseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--thread-multiple") {
      continue;
    } else if (s == "--distinct") {
      a.distinct = true;
    } else if (s == "--mb") {
      while (i + 1 < argc && argv[i + 1][0] != '-') a.mbs.push_back(std::atof(argv[++i]));
    } else if (s == "--calls" && i + 1 < argc) {
      a.calls = std::atoi(argv[++i]);
    } else if (s == "--warmup" && i + 1 < argc) {
      a.warmup = std::atoi(argv[++i]);
    } else if (s == "--iters" && i + 1 < argc) {
      a.iters = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s --mb MB... --calls K --warmup W --iters N [--distinct]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (a.mbs.empty()) a.mbs = {16, 64};
  return a;
}
}  // namespace

int main(int argc, char** argv) {
  // --thread-multiple: initialise as et_replay does (its watchdog thread may
  // call MPI), to tell that cost apart from the replay's own.
  bool multiple = false;
  for (int i = 1; i < argc; ++i) multiple = multiple || std::strcmp(argv[i], "--thread-multiple") == 0;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const Args a = parseArgs(argc, argv);
  // (type, bytes) -> per-call times of the measured iterations.
  std::map<std::pair<std::string, uint64_t>, std::vector<double>> samples;
  // Buffers live for the whole run, as the replay's tensors do.
  std::map<std::pair<double, int>, std::vector<float>> bufs;
  auto buffer = [&](double mb, int idx, int elems) -> float* {
    std::vector<float>& v = bufs[{mb, idx}];
    if (v.empty()) v.assign(static_cast<size_t>(elems), 1.0f);
    return v.data();
  };
  for (int it = 0; it < a.warmup + a.iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    for (double mb : a.mbs) {
      // Same element count as the trace generator: a multiple of n.
      const int elems = static_cast<int>(static_cast<uint64_t>(mb * 1024 * 1024 / 4) / n * n);
      for (const char* type : {"all_reduce", "all_to_all"}) {
        const bool ar = std::strcmp(type, "all_reduce") == 0;
        for (int c = 0; c < a.calls; ++c) {
          // As the trace lays them out (make_comm_et.py bench): shared = one
          // all_reduce buffer and one all_to_all pair per size (not the same
          // memory: a buffer still in cache would flatter the loop);
          // distinct = own buffers for every call.
          const int idx = a.distinct ? 2 * (c + (ar ? 0 : a.calls)) : (ar ? 0 : 2);
          float* send = buffer(mb, idx, elems);
          float* recv = ar ? nullptr : buffer(mb, idx + 1, elems);
          const double t0 = nowUs();
          if (ar) {
            MPI_Allreduce(MPI_IN_PLACE, send, elems, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          } else {
            MPI_Alltoall(send, elems / n, MPI_FLOAT, recv, elems / n, MPI_FLOAT,
                         MPI_COMM_WORLD);
          }
          const double dt = nowUs() - t0;
          if (it >= a.warmup) samples[{type, static_cast<uint64_t>(elems) * 4}].push_back(dt);
        }
      }
    }
  }
  if (rank == 0) {
    for (const auto& [key, times] : samples) {
      const double t = median(times);
      const bool ar = key.first == "all_reduce";
      const double factor = ar ? 2.0 * (n - 1) / n : (n - 1.0) / n;
      std::printf("%s %llu %.1f %.4f\n", key.first.c_str(),
                  static_cast<unsigned long long>(key.second), t,
                  static_cast<double>(key.second) / (t * 1e3) * factor);
    }
  }
  MPI_Finalize();
  return 0;
}
