// SPDX-License-Identifier: MIT
// The composer's shape check on the committed zoo samples: what the trace
// does not record about values (sparse gradients, Python numbers wrapped into
// 0-dim tensors, scalar divisors) is filled in as the replay does, so an
// unchanged trace passes and its checks are counted by method.
#include <gtest/gtest.h>

#include "composer/shape_check.h"
#include "core/trace_io.h"

namespace etb::compose {
namespace {

trace::Trace zooSample(const std::string& name) {
  return trace::readTrace(std::string(ETB_SOURCE_DIR) + "/fleet_samples/zoo/" + name + "/" +
                          name + ".et.json.gz");
}

uint64_t detailCount(const CheckReport& r, const std::string& key) {
  auto it = r.detail.find(key);
  return it == r.detail.end() ? 0 : it->second;
}

// SparseAdam's step on sparse COO gradients: coalesce, _indices, _values,
// sparse_mask run on CPU with sparse inputs (dense ones fault: "Could not
// run 'aten::is_coalesced' with arguments from the 'CPU' backend").
TEST(ZooCheck, SparseGradientsAreCheckedAsSparseOnCpu) {
  const trace::Trace t = zooSample("zoo_sparse");
  CheckReport r;
  ASSERT_NO_THROW(r = checkShapes(t));
  EXPECT_GT(detailCount(r, "cpu (no meta kernel): aten::coalesce"), 0u);
  EXPECT_GT(detailCount(r, "cpu (no meta kernel): aten::sparse_mask"), 0u);
}

// MoE routing: 0.01 * aux (a wrapped double times a float 0-dim tensor stays
// float) and token // 2 (floor_divide, checked on CPU: a zero-filled 0-dim
// divisor raised ZeroDivisionError).
TEST(ZooCheck, WrappedNumbersAndScalarDivisorsPass) {
  const trace::Trace t = zooSample("zoo_moe");
  CheckReport r;
  ASSERT_NO_THROW(r = checkShapes(t));
  EXPECT_GT(r.by_method.at("meta"), 0u);
}

}  // namespace
}  // namespace etb::compose
