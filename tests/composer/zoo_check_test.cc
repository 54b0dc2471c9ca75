// SPDX-License-Identifier: MIT
// The composer's shape check on the committed zoo samples: what the trace
// does not record about values (sparse gradients, Python numbers wrapped into
// 0-dim tensors, scalar divisors) is filled in as the replay does, so an
// unchanged trace passes and its checks are counted by method.
#include <gtest/gtest.h>

#include "composer/shape_check.h"
#include "core/base/error.h"
#include "core/trace_io.h"
#include "tests/replayer/trace_builder.h"

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

// "No kernel for this backend" in the words of both libtorchs (each message
// as libtorch printed it) sends an op to the CPU check; a shape error does
// not. libtorch 2.11 (pip, on an H200) said the second for aten::relu, whose
// meta function lives in Python there, and the composer took it for a shape
// error in every recorded trace.
TEST(ShapeCheck, MissingMetaKernelInTheWordsOfBothLibtorchs) {
  EXPECT_TRUE(isMissingKernel("Could not run 'aten::_embedding_bag' with arguments from the "
                              "'Meta' backend."));
  EXPECT_TRUE(isMissingKernel(
      "aten::relu: attempted to run this operator with Meta tensors, but there was no fake impl "
      "or Meta kernel registered. You may have run into this message while using an operator "
      "with PT2 compilation APIs (torch.compile/torch.export)"));
  EXPECT_FALSE(isMissingKernel("mat1 and mat2 shapes cannot be multiplied (4x5 and 6x7)"));
}

// repeat_interleave with a tensor of repeats (wild3_dyn: embedding rows
// repeated by their counts) has an output length that is the sum of the
// repeats' values, which a meta tensor does not hold: the meta kernel says
// [0, 16] and the check refused the trace, so et_compose --repeat / --dtype
// failed on it. Only the call is checked, as for nonzero.
TEST(ShapeCheck, RepeatInterleaveByATensorIsDataDependent) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const trace::Value repeats = b.tensor({17}, trace::DType::kInt64);
  b.op("aten::repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, "
       "int? output_size=None) -> Tensor",
       {b.tensor({17, 16}), repeats, trace::makeInt(t, 0), trace::makeNone(t)},
       {b.tensor({48, 16})});
  const trace::Trace trace = b.finish();
  CheckReport r;
  ASSERT_NO_THROW(r = checkShapes(trace));
  EXPECT_EQ(r.ops, 1u);
}

// CTC's CPU kernel reads past its buffers when the per-sample lengths do
// not fit log_probs (zoo_speech at batch 4=8 crashed et_compose): the check
// names the lists instead, and passes lengths that fit.
TEST(ShapeCheck, CtcLengthsThatDoNotFitAreNamedNotRun) {
  auto ctc = [](int64_t batch, std::vector<int64_t> in_len, std::vector<int64_t> tgt_len) {
    test::TraceBuilder b;
    trace::Trace& t = b.trace();
    b.op("aten::_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, "
         "int blank=0, bool zero_infinity=False) -> (Tensor, Tensor)",
         {b.tensor({10, batch, 5}), b.tensor({batch, 6}, trace::DType::kInt64), test::intList(t, in_len),
          test::intList(t, tgt_len), trace::makeInt(t, 0), trace::makeBool(t, false)},
         {b.tensor({batch}), b.tensor({batch, 10, 13})});
    return b.finish();
  };
  EXPECT_NO_THROW(checkShapes(ctc(4, {10, 10, 9, 8}, {6, 3, 3, 1})));
  try {
    checkShapes(ctc(8, {10, 10, 9, 8}, {6, 3, 3, 1}));
    FAIL() << "four lengths for a batch of 8 must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("one entry per sample"), std::string::npos) << e.what();
  }
  EXPECT_THROW(checkShapes(ctc(4, {10, 11, 9, 8}, {6, 3, 3, 1})), InputError) << "an input length of 11 > 10 steps";
  EXPECT_THROW(checkShapes(ctc(4, {10, 10, 9, 8}, {7, 3, 3, 1})), InputError) << "a target of 7 > 6";
}

}  // namespace
}  // namespace etb::compose
