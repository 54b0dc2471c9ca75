// SPDX-License-Identifier: MIT
//
// Chooses the backend: MPI when mpirun (or srun) started more than one rank,
// NCCL on top of it for CUDA replay when built in, the local one otherwise.
#include "core/base/log.h"
#include "etb/config.h"
#include "replayer/comm/communicator.h"
#include "replayer/comm/mpi_comm.h"
#include "replayer/comm/mpi_util.h"

namespace etb::replay {

std::unique_ptr<Communicator> makeCommunicator(const CommOptions& options) {
  if (options.force_local) return makeLocalCommunicator();
  int init = 0;
  MPI_Initialized(&init);
  if (!init && !comm::launchedByMpiWithRanks()) return makeLocalCommunicator();
  comm::ensureMpiInitialized();
  int world = 1;
  ETB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));
  if (world <= 1) return makeLocalCommunicator();
  auto mpi = comm::makeMpiCommunicator(options);
  if (options.device.rfind("cuda", 0) == 0) {
#if ETB_WITH_NCCL
    return comm::makeNcclCommunicator(std::move(mpi), options);
#else
    ETB_LOG(kWarn) << "--device " << options.device
                   << ": built without NCCL; collectives run through MPI on host scratch buffers";
#endif
  }
  return mpi;
}

}  // namespace etb::replay
