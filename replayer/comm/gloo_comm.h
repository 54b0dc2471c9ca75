// SPDX-License-Identifier: MIT
//
// The gloo backend (built with ETB_WITH_GLOO): libtorch's own
// c10d::ProcessGroupGloo, the path a torch.distributed job on the "gloo"
// backend takes, on host tensors. Private to replayer/comm/.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <vector>

#include "replayer/comm/comm_plan.h"
#include "replayer/comm/communicator.h"

namespace etb::replay::comm {

// Gloo on host memory. `control` (the MPI communicator) does the rendezvous
// (rank 0 serves a c10d::TCPStore on 127.0.0.1 and broadcasts its port), the
// pre-flight, gathers, barrier and abort. Every rank must run on one host;
// otherwise this throws RuntimeError saying to use --comm mpi. `control` is
// taken over only on success (a failure can still abort the job through it).
std::unique_ptr<Communicator> makeGlooCommunicator(std::unique_ptr<Communicator>& control,
                                                   const CommOptions& options);

// How one Message travels through gloo: the tensors handed to the process
// group (`send`, `recv`, one-dimensional) and what completion must do with
// them. Types gloo 1.13 cannot carry are reinterpreted as bytes (data
// movement) or reduced in float32 (reductions) and copied back.
struct GlooBuffers {
  at::Tensor send, recv;          // wire tensors given to the process group
  at::Tensor user_send, user_recv;  // the caller's buffers when the wire is a copy
  std::vector<at::Tensor> keep;     // owners of memory the wire tensors only view
  int64_t wire_per_elem = 1;        // wire elements per recorded element (bytes: its size)
  bool reduce_scatter_via_allreduce = false;
};

// True for the scalar types ProcessGroupGloo 1.13 accepts.
bool glooCarries(at::ScalarType type);

// Wire buffers for `m`: the bound tensors (`inputs`/`outputs`) when they fit,
// else `scratch(elems, type)` tensors sized from the message.
using ScratchFn = std::function<at::Tensor(int64_t elems, at::ScalarType type, int slot)>;
GlooBuffers glooBuffers(const Message& m, const std::vector<at::Tensor>& inputs,
                        const std::vector<at::Tensor>& outputs, const ScratchFn& scratch);

// After the process group completed: averages, the reduce-scatter chunk and
// copies back from converted wire tensors.
void glooFinish(const Message& m, GlooBuffers& b);

}  // namespace etb::replay::comm
