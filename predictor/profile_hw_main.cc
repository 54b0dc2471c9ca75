// SPDX-License-Identifier: MIT
//
// et_profile_hw -o hw.json [--device cpu|cuda[:N]] [--threads N] [--quick]
// Measures this machine once, independent of any trace. Under mpirun the
// compute side is measured by rank 0 alone (the others wait), then every
// rank takes part in the collective sweep of the whole world: on MPI, then
// on gloo when built in (et_replay replays gloo-recorded traces on gloo).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <ATen/Context.h>
#include <CLI/CLI.hpp>

#include "core/tools/tool_main.h"
#include "etb/config.h"
#include "predictor/hw_bench.h"
#include "replayer/threads.h"

namespace {
using namespace etb;

// "873 s (embedding_bag 402, gemm_conv_again 210, gemm 90)": the total and
// the three longest parts.
std::string tookLine(const predict::HwIdentity& id) {
  auto parts = id.sections_s;
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::ostringstream line;
  line << std::fixed << std::setprecision(0) << id.tookSeconds() << " s (";
  for (size_t i = 0; i < parts.size() && i < 3; ++i) {
    line << (i ? ", " : "") << parts[i].first << " " << parts[i].second;
  }
  line << ")";
  return line.str();
}

int profileMain(const std::string& out_path, predict::ProfileOptions& o) {
  if (o.device != "cpu" && !predict::onGpu(o)) {
    ETB_INPUT_ERROR(SourceLoc{"--device"}, "cpu, cuda or cuda:N (got \"", o.device, "\")");
  }
  if (predict::onGpu(o) && (!ETB_WITH_CUDA || !at::hasCUDA())) {
    ETB_INPUT_ERROR(SourceLoc{"--device"}, o.device, ": ",
                    ETB_WITH_CUDA ? "this libtorch has no CUDA device to run on"
                                  : "etbench was built without ETB_WITH_CUDA (scripts/build_cuda.sh "
                                    "builds it against a CUDA libtorch)");
  }
  if (o.threads < 1) ETB_INPUT_ERROR(SourceLoc{"--threads"}, "must be at least 1");
  replay::CommOptions copts;
  std::unique_ptr<replay::Communicator> comm = replay::makeCommunicator(copts);
  replay::setIntraOpThreads(o.threads);
  const bool root = comm->rank() == 0;
  if (root && isatty(STDERR_FILENO)) {
    o.progress = [](const std::string& what) { std::cerr << "et_profile_hw: " << what << "\n"; };
  }
  std::ofstream out;
  if (root) {
    out.open(out_path);
    if (!out) ETB_INPUT_ERROR(SourceLoc{out_path}, "cannot write the profile");
  }
  predict::HwProfile hw;
  hw.identity = predict::thisMachine(o, *comm);
  if (root) predict::measureCompute(o, hw);
  // The others sleep meanwhile: a rank spinning in MPI_Barrier on a core it
  // shares with rank 0 would halve every kernel's measured rate.
  comm->sleepingBarrier();
  const auto collectives = [&] {
    predict::timedSection(hw, "collectives:" + comm->backendName(),
                          [&] { predict::measureCollectives(o, *comm, hw); });
  };
  if (comm->worldSize() > 1) collectives();
  if (comm->worldSize() > 1 && replay::commBackendBuilt("gloo")) {
    comm = replay::switchCommBackend(comm, "gloo", copts);
    collectives();
  }
  if (!root) return 0;
  hw.identity.load_avg = std::max(hw.identity.load_avg, predict::loadAverage());
  if (predict::measuredBesideOtherWork(hw.identity)) {
    std::cerr << "et_profile_hw: warning: load average " << hw.identity.load_avg << " on "
              << hw.identity.cores << " cores, " << predict::otherLoad(hw.identity)
              << " beside this profile's " << hw.identity.threads << " thread(s): other work "
              << "shared this machine's cores and caches; predictions hold for replays run in "
              << "the same state\n";
  }
  out << predict::profileToJson(hw);
  std::cout << "et_profile_hw: wrote " << out_path << " (" << hw.gemm.size() << " GEMM, "
            << hw.conv.size() << " conv, " << hw.embedding.size() << " embedding, "
            << hw.collectives.size() << " collective points; " << comm->worldSize()
            << " rank(s)) in " << tookLine(hw.identity) << "\n";
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measure this machine for et_predict", "et_profile_hw"};
  std::string out_path;
  predict::ProfileOptions o;
  app.add_option("-o,--output", out_path, "hardware profile to write (JSON)")->required();
  app.add_option("--device", o.device,
                 "cpu, or cuda[:N]: kernel curves in device time, each op's launch on the host "
                 "beside them")->capture_default_str();
  app.add_option("--threads", o.threads, "intra-op threads, as et_replay --threads")
      ->capture_default_str();
  app.add_flag("--quick", o.quick,
               "the GEMM/conv shapes of a full profile, fewer memory and lookup sizes, shorter "
               "timings, one pass (CI)");
  return runTool(app, argc, argv, [&] { return profileMain(out_path, o); });
}
