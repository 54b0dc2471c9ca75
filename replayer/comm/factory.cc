// SPDX-License-Identifier: MIT
//
// Chooses the backend: MPI when mpirun (or srun) started more than one rank,
// with gloo or NCCL on top of it when asked for (or when the trace's process
// groups name them), the local one otherwise. Compiled with ETB_WITH_MPI=0
// (generated programs of single-rank traces, which link no MPI) only the
// local one exists, and a multi-rank launch is refused.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/base/error.h"
#include "core/base/log.h"
#include "etb/config.h"
#include "replayer/comm/communicator.h"
#if ETB_WITH_MPI
#include "replayer/comm/mpi_comm.h"
#include "replayer/comm/mpi_util.h"
#endif
// gloo and NCCL start from the MPI communicator (rendezvous, unique id).
#define ETB_GLOO_BUILT (ETB_WITH_GLOO && ETB_WITH_MPI)
#define ETB_NCCL_BUILT (ETB_WITH_NCCL && ETB_WITH_MPI)
#if ETB_GLOO_BUILT
#include "replayer/comm/gloo_comm.h"
#endif

namespace etb::replay {
namespace {
bool isCuda(const CommOptions& o) { return o.device.rfind("cuda", 0) == 0; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The backend a recorded process group used for the replay's device:
// "cpu:gloo,cuda:nccl" (torch >= 2.0), "gloo", "nccl", "mpi"; "" if none.
std::string recordedBackend(const std::string& config, bool cuda) {
  const std::string c = lower(config);
  if (cuda && c.find("nccl") != std::string::npos) return "nccl";
  if (c.find("gloo") != std::string::npos) return "gloo";
  if (c.find("mpi") != std::string::npos) return "mpi";
  return "";
}

// True when the environment says mpirun/srun started us with world > 1.
bool launchedWithRanks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE",
                          "SLURM_NTASKS"}) {
    const char* v = std::getenv(var);
    if (v && std::atoi(v) > 1) return true;
  }
  return false;
}

std::string defaultBackend(const CommOptions& o) {
  return isCuda(o) && commBackendBuilt("nccl") ? "nccl" : "mpi";
}
}  // namespace

bool commBackendBuilt(const std::string& name) {
  if (name == "mpi") return ETB_WITH_MPI != 0;
  if (name == "gloo") return ETB_GLOO_BUILT != 0;
  if (name == "nccl") return ETB_NCCL_BUILT != 0;
  return false;
}

void checkCommBackend(const CommOptions& options) {
  const std::string& b = options.backend;
  if (b.empty()) return;
  if (b != "mpi" && b != "gloo" && b != "nccl") {
    ETB_INPUT_ERROR(SourceLoc{"--comm"}, "unknown backend \"", b, "\" (mpi, gloo or nccl)");
  }
  if (!ETB_WITH_MPI) {
    ETB_INPUT_ERROR(SourceLoc{"--comm"}, "this program was built without MPI (its trace has one rank "
                    "and no collectives), so it has no communication backend");
  }
  if (!commBackendBuilt(b)) {
    ETB_INPUT_ERROR(SourceLoc{"--comm"}, "this et_replay was built without ", b,
                    " (configure with -DETB_WITH_", b == "gloo" ? "GLOO" : "NCCL",
                    "=ON; gloo needs Debian's libgloo-dev); use --comm mpi");
  }
  if (b == "nccl" && !isCuda(options)) {
    ETB_INPUT_ERROR(SourceLoc{"--comm"}, "nccl runs on CUDA tensors: add --device cuda");
  }
}

std::string pickCommBackend(const trace::Trace& trace, const CommOptions& options) {
  if (!options.backend.empty()) return options.backend;
  for (const trace::ProcessGroup& pg : trace.process_groups) {
    const std::string b = recordedBackend(pg.backend, isCuda(options));
    if (b.empty()) continue;
    if (commBackendBuilt(b) && (b != "nccl" || isCuda(options))) return b;
    ETB_LOG(kInfo) << "the trace's process groups used " << b << ", which this build lacks; "
                   << "replaying on " << defaultBackend(options);
    break;
  }
  return defaultBackend(options);
}

std::unique_ptr<Communicator> switchCommBackend(std::unique_ptr<Communicator>& control,
                                                const std::string& backend,
                                                const CommOptions& options) {
  if (control->worldSize() <= 1) return std::move(control);
  if (backend == "mpi" && isCuda(options)) {
    ETB_LOG(kWarn) << "--device " << options.device
                   << ": collectives run through MPI on host scratch buffers";
  }
  if (backend == control->backendName()) return std::move(control);
  ETB_CHECK(control->backendName() == "mpi", "switchCommBackend needs the MPI communicator");
#if ETB_GLOO_BUILT
  if (backend == "gloo") return comm::makeGlooCommunicator(control, options);
#endif
#if ETB_NCCL_BUILT
  if (backend == "nccl") return comm::makeNcclCommunicator(std::move(control), options);
#endif
  ETB_INPUT_ERROR(SourceLoc{"--comm"}, "this et_replay was built without ", backend);
}

int launcherLocalRank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                          "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char* v = std::getenv(var);
    if (v && *v) return std::atoi(v);
  }
  return -1;
}

std::string rankDevice(const std::string& asked, int local_rank, int devices) {
  if (asked != "cuda") return asked;
  return "cuda:" + std::to_string(local_rank >= 0 && devices > 0 ? local_rank % devices : 0);
}

std::unique_ptr<Communicator> makeCommunicator(const CommOptions& options) {
  if (options.force_local) return makeLocalCommunicator();
  checkCommBackend(options);
#if ETB_WITH_MPI
  int init = 0;
  MPI_Initialized(&init);
  if (!init && !launchedWithRanks()) return makeLocalCommunicator();
  comm::ensureMpiInitialized();
  int world = 1;
  ETB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));
  if (world <= 1) return makeLocalCommunicator();
  const std::string backend = options.backend.empty() ? defaultBackend(options) : options.backend;
  std::unique_ptr<Communicator> mpi = comm::makeMpiCommunicator(options);
  return switchCommBackend(mpi, backend, options);
#else
  if (launchedWithRanks()) {
    ETB_INPUT_ERROR(SourceLoc{"mpirun"}, "this program was built without MPI for a one-rank trace; "
                    "run it without mpirun (every rank would replay the same iteration alone)");
  }
  return makeLocalCommunicator();
#endif
}

}  // namespace etb::replay
