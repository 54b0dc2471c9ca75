// SPDX-License-Identifier: MIT
//
// Binding replay tensors to communication buffers, shared by the backends.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "core/model/trace.h"

namespace etb::replay::comm {

// The data pointer of the single bound tensor when it can serve as the
// buffer of `bytes` bytes: one defined, contiguous tensor of exactly that
// size on the wanted device kind. nullptr otherwise (the caller then uses
// scratch memory sized from the recorded message).
inline void* boundData(const std::vector<at::Tensor>& ts, uint64_t bytes, bool cuda) {
  if (ts.size() != 1) return nullptr;
  const at::Tensor& t = ts[0];
  if (!t.defined() || t.is_cuda() != cuda || !t.is_contiguous()) return nullptr;
  if (static_cast<uint64_t>(t.nbytes()) != bytes) return nullptr;
  return t.data_ptr();
}

inline trace::DType dtypeOf(at::ScalarType s) {
  using trace::DType;
  switch (s) {
    case at::kFloat: return DType::kFloat;
    case at::kDouble: return DType::kDouble;
    case at::kHalf: return DType::kHalf;
    case at::kBFloat16: return DType::kBFloat16;
    case at::kLong: return DType::kInt64;
    case at::kInt: return DType::kInt32;
    case at::kShort: return DType::kInt16;
    case at::kChar: return DType::kInt8;
    case at::kByte: return DType::kUInt8;
    case at::kBool: return DType::kBool;
    case at::kComplexFloat: return DType::kComplexFloat;
    case at::kComplexDouble: return DType::kComplexDouble;
    default: return DType::kUnknown;
  }
}

inline at::ScalarType scalarTypeOf(trace::DType d) {
  using trace::DType;
  switch (d) {
    case DType::kDouble: return at::kDouble;
    case DType::kHalf: return at::kHalf;
    case DType::kBFloat16: return at::kBFloat16;
    case DType::kInt64: return at::kLong;
    case DType::kInt32: return at::kInt;
    case DType::kInt16: return at::kShort;
    case DType::kInt8: return at::kChar;
    case DType::kUInt8: return at::kByte;
    case DType::kBool: return at::kBool;
    case DType::kComplexFloat: return at::kComplexFloat;
    case DType::kComplexDouble: return at::kComplexDouble;
    default: return at::kFloat;
  }
}

// ReduceOp::kAvg: backends without an average reduce sum and divide here
// (host memory; integers truncate like torch's).
inline void divideInPlace(void* data, uint64_t elems, trace::DType dtype, int n) {
  if (elems == 0 || n <= 1 || dtype == trace::DType::kBool) return;
  at::Tensor t = at::from_blob(data, {static_cast<int64_t>(elems)},
                               at::TensorOptions().dtype(scalarTypeOf(dtype)));
  if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type())) {
    t.div_(n);
  } else {
    t.div_(n, "trunc");
  }
}

}  // namespace etb::replay::comm
