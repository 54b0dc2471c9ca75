// SPDX-License-Identifier: MIT
// The trace model's per-tensor facts (core/model/trace.h).
#include "core/model/trace.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace etb::trace {
namespace {

TensorRef tensorOf(uint32_t itemsize, DType dtype) {
  TensorRef r;
  r.numel = 10;
  r.itemsize = itemsize;
  r.dtype = dtype;
  return r;
}

// The recorded itemsize wins; without one (itemsize 0) the dtype's size, by
// the sizes of C's own types; nothing known gives 0, never a guess (each
// caller says what it assumes then).
TEST(TraceModel, ItemBytesFromTheRecordThenTheDtype) {
  EXPECT_EQ(itemBytes(tensorOf(2, DType::kFloat)), 2);
  EXPECT_EQ(itemBytes(tensorOf(0, DType::kDouble)), static_cast<int>(sizeof(double)));
  EXPECT_EQ(itemBytes(tensorOf(0, DType::kInt16)), static_cast<int>(sizeof(int16_t)));
  EXPECT_EQ(itemBytes(tensorOf(0, DType::kBool)), static_cast<int>(sizeof(bool)));
  EXPECT_EQ(itemBytes(tensorOf(0, DType::kComplexDouble)), static_cast<int>(2 * sizeof(double)));
  EXPECT_EQ(itemBytes(tensorOf(0, DType::kUnknown)), 0);
}

}  // namespace
}  // namespace etb::trace
