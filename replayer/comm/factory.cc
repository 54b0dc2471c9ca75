// SPDX-License-Identifier: MIT
//
// Chooses the backend: MPI when mpirun (or srun) started more than one rank,
// with gloo or NCCL on top of it when asked for (or when the trace's process
// groups name them), the local one otherwise.
#include <algorithm>
#include <cctype>

#include "core/base/error.h"
#include "core/base/log.h"
#include "etb/config.h"
#include "replayer/comm/communicator.h"
#include "replayer/comm/mpi_comm.h"
#include "replayer/comm/mpi_util.h"
#if ETB_WITH_GLOO
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

std::string defaultBackend(const CommOptions& o) {
  return isCuda(o) && commBackendBuilt("nccl") ? "nccl" : "mpi";
}
}  // namespace

bool commBackendBuilt(const std::string& name) {
  if (name == "mpi") return true;
  if (name == "gloo") return ETB_WITH_GLOO != 0;
  if (name == "nccl") return ETB_WITH_NCCL != 0;
  return false;
}

void checkCommBackend(const CommOptions& options) {
  const std::string& b = options.backend;
  if (b.empty()) return;
  if (b != "mpi" && b != "gloo" && b != "nccl") {
    ETB_INPUT_ERROR(SourceLoc{"--comm"}, "unknown backend \"", b, "\" (mpi, gloo or nccl)");
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
#if ETB_WITH_GLOO
  if (backend == "gloo") return comm::makeGlooCommunicator(control, options);
#endif
#if ETB_WITH_NCCL
  if (backend == "nccl") return comm::makeNcclCommunicator(std::move(control), options);
#endif
  ETB_INPUT_ERROR(SourceLoc{"--comm"}, "this et_replay was built without ", backend);
}

std::unique_ptr<Communicator> makeCommunicator(const CommOptions& options) {
  if (options.force_local) return makeLocalCommunicator();
  checkCommBackend(options);
  int init = 0;
  MPI_Initialized(&init);
  if (!init && !comm::launchedByMpiWithRanks()) return makeLocalCommunicator();
  comm::ensureMpiInitialized();
  int world = 1;
  ETB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));
  if (world <= 1) return makeLocalCommunicator();
  const std::string backend = options.backend.empty() ? defaultBackend(options) : options.backend;
  std::unique_ptr<Communicator> mpi = comm::makeMpiCommunicator(options);
  return switchCommBackend(mpi, backend, options);
}

}  // namespace etb::replay
