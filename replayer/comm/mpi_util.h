// SPDX-License-Identifier: MIT
//
// MPI helpers private to replayer/comm/: the checked-call macro, MPI's
// start-up and the dtype / reduce-op mapping.
#pragma once

#include <mpi.h>

#include <string>

#include "core/model/trace.h"

namespace etb::replay::comm {

// Throws RuntimeError with the call text, MPI's error string, rank and host.
[[noreturn]] void throwMpiError(const char* call, int code, const char* file, int line);

// "r3@host" of this process (rank -1 before MPI_Init).
std::string rankAndHost();

// MPI_Init_thread (MPI_THREAD_MULTIPLE wanted, so the watchdog can call
// MPI_Abort) unless already initialised; finalises at exit if it initialised.
void ensureMpiInitialized();
// True when the MPI library granted MPI_THREAD_MULTIPLE.
bool mpiThreadMultiple();

// Data movement type of `dtype`: half and bfloat16 travel as 2-byte words.
MPI_Datatype mpiDatatype(trace::DType dtype);
// Reduction for `op` on `dtype`. Half and bfloat16 use user ops that upcast
// each element to float, combine and round back (MPI has no 16-bit floats).
// kAvg reduces as kSum; the caller divides. Throws InputError via `where`
// for combinations MPI cannot do (min/max of complex numbers).
MPI_Op mpiReduceOp(trace::ReduceOp op, trace::DType dtype, const std::string& where);

}  // namespace etb::replay::comm

#define ETB_MPI_CHECK(expr)                                                     \
  do {                                                                          \
    const int etb_mpi_rc_ = (expr);                                             \
    if (etb_mpi_rc_ != MPI_SUCCESS) {                                           \
      ::etb::replay::comm::throwMpiError(#expr, etb_mpi_rc_, __FILE__, __LINE__); \
    }                                                                           \
  } while (0)
