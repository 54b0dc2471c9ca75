// SPDX-License-Identifier: MIT
//
// Backends behind makeCommunicator(); private to replayer/comm/.
#pragma once

#include <memory>

#include "replayer/comm/communicator.h"

namespace etb::replay::comm {

// MPI on host memory. MPI must be initialised and the world larger than one.
std::unique_ptr<Communicator> makeMpiCommunicator(const CommOptions& options);

// NCCL on CUDA memory; `control` (the MPI communicator) bootstraps NCCL and
// carries pre-flight, gather-to-root, barrier and abort.
std::unique_ptr<Communicator> makeNcclCommunicator(std::unique_ptr<Communicator> control,
                                                   const CommOptions& options);

}  // namespace etb::replay::comm
