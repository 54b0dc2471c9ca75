// SPDX-License-Identifier: MIT
#include "replayer/comm/communicator.h"

namespace etb::replay {

// TODO(comm): pick MPI/NCCL when launched by mpirun.
std::unique_ptr<Communicator> makeCommunicator(const CommOptions&) {
  return makeLocalCommunicator();
}

}  // namespace etb::replay
