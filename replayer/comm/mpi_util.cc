// SPDX-License-Identifier: MIT
#include "replayer/comm/mpi_util.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/base/error.h"

namespace etb::replay::comm {
namespace {
bool g_thread_multiple = false;

void finalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

enum class Fn { kSum, kProd, kMin, kMax };

template <typename T, Fn F>
void combine16(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    float r = 0;
    if constexpr (F == Fn::kSum) r = x + y;
    if constexpr (F == Fn::kProd) r = x * y;
    if constexpr (F == Fn::kMin) r = std::min(x, y);
    if constexpr (F == Fn::kMax) r = std::max(x, y);
    b[i] = static_cast<T>(r);
  }
}

template <typename T>
MPI_Op userOp(Fn fn) {
  // Created once per process after MPI_Init; freed by MPI_Finalize.
  static MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static MPI_User_function* fns[4] = {combine16<T, Fn::kSum>, combine16<T, Fn::kProd>,
                                      combine16<T, Fn::kMin>, combine16<T, Fn::kMax>};
  const int i = static_cast<int>(fn);
  if (ops[i] == MPI_OP_NULL) ETB_MPI_CHECK(MPI_Op_create(fns[i], 1, &ops[i]));
  return ops[i];
}

Fn fnOf(trace::ReduceOp op) {
  switch (op) {
    case trace::ReduceOp::kProduct: return Fn::kProd;
    case trace::ReduceOp::kMin: return Fn::kMin;
    case trace::ReduceOp::kMax: return Fn::kMax;
    default: return Fn::kSum;  // sum, avg (divided afterwards), unknown
  }
}
}  // namespace

std::string rankAndHost() {
  int init = 0, fin = 0, rank = -1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return "r" + std::to_string(rank) + "@" + host;
}

void throwMpiError(const char* call, int code, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(code, text, &len);
  ETB_RUNTIME_ERROR(file, ":", line, ": ", call, " failed: ", text, " (", rankAndHost(), ")");
}

void ensureMpiInitialized() {
  int init = 0;
  MPI_Initialized(&init);
  int provided = MPI_THREAD_SINGLE;
  if (!init) {
    ETB_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    std::atexit(finalizeAtExit);
  } else {
    MPI_Query_thread(&provided);
  }
  g_thread_multiple = provided >= MPI_THREAD_MULTIPLE;
  // Errors come back as codes so ETB_MPI_CHECK can name the call.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

bool mpiThreadMultiple() { return g_thread_multiple; }

MPI_Datatype mpiDatatype(trace::DType dtype) {
  using trace::DType;
  switch (dtype) {
    case DType::kDouble: return MPI_DOUBLE;
    case DType::kHalf:
    case DType::kBFloat16: return MPI_UINT16_T;
    case DType::kInt64: return MPI_INT64_T;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kInt16: return MPI_INT16_T;
    case DType::kInt8: return MPI_INT8_T;
    case DType::kUInt8: return MPI_UINT8_T;
    case DType::kBool: return MPI_C_BOOL;
    case DType::kComplexFloat: return MPI_C_FLOAT_COMPLEX;
    case DType::kComplexDouble: return MPI_C_DOUBLE_COMPLEX;
    default: return MPI_FLOAT;
  }
}

MPI_Op mpiReduceOp(trace::ReduceOp op, trace::DType dtype, const std::string& where) {
  using trace::DType;
  const Fn fn = fnOf(op);
  if (dtype == DType::kHalf) return userOp<c10::Half>(fn);
  if (dtype == DType::kBFloat16) return userOp<c10::BFloat16>(fn);
  if (dtype == DType::kBool) return fn == Fn::kMin || fn == Fn::kProd ? MPI_LAND : MPI_LOR;
  const bool complex = dtype == DType::kComplexFloat || dtype == DType::kComplexDouble;
  if (complex && (fn == Fn::kMin || fn == Fn::kMax)) {
    ETB_RUNTIME_ERROR(where, ": min/max reduction of complex numbers is undefined");
  }
  switch (fn) {
    case Fn::kProd: return MPI_PROD;
    case Fn::kMin: return MPI_MIN;
    case Fn::kMax: return MPI_MAX;
    default: return MPI_SUM;
  }
}

}  // namespace etb::replay::comm
