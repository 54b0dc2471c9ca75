// SPDX-License-Identifier: MIT
// Dimension substitution, dtype change and world size on the fleet samples
// and on the comm traces tests/mpi/make_comm_et.py writes.
#include "composer/scale.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "composer/shape_check.h"
#include "composer/world_size.h"
#include "core/base/error.h"
#include "core/trace_io.h"
#include "tests/composer/compose_fixture.h"
#include "tests/replayer/trace_builder.h"
#include "tests/test_util.h"

namespace etb::compose {
namespace {
using test::fleetSample;

uint64_t countDim(const trace::Trace& t, int64_t d) {
  uint64_t n = 0;
  for (const trace::TensorRef& r : t.tensors) {
    const auto& s = t.list(r.shape);
    n += std::count(s.begin(), s.end(), d) > 0 ? 1 : 0;
  }
  return n;
}

TEST(ScaleDim, HiddenSizeEverywhereAndConsistent) {
  trace::Trace t = fleetSample("mlp");
  const uint64_t with_1024 = countDim(t, 1024);
  ASSERT_GT(with_1024, 0u);
  for (size_t i = 0; i < t.nodes.size(); ++i) t.nodes[i].dur_us = 10;
  const ScaleStats s = scaleDimension(t, 1024, 2048);
  EXPECT_EQ(s.shapes, with_1024);
  EXPECT_EQ(countDim(t, 1024), 0u);
  for (const trace::TensorRef& r : t.tensors) {
    const auto& shape = t.list(r.shape);
    const int64_t numel = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
    if (std::count(shape.begin(), shape.end(), 2048) > 0) {  // the ones it rewrote
      EXPECT_EQ(r.numel, static_cast<uint64_t>(numel));
    }
  }
  // A 256x1024 @ 1024x1024 linear now does 4x the FLOPs: addmm's time x4.
  for (const trace::Node& n : t.nodes) {
    if (t.name(n) == "aten::addmm" && t.tensors[n.outputs[0].tensor].numel == 256u * 2048) {
      EXPECT_DOUBLE_EQ(n.dur_us, 40.0);
      break;
    }
  }
  const CheckReport rep = checkShapes(t);
  EXPECT_GT(rep.by_method.at("meta"), 0u);
}

// A DDP bucket: flatten_dense_tensors sums its inputs' sizes, which no
// recorded size equal to the old dimension says. After 64 -> 128 the flat
// bucket is 128 + 128 x 2 = 384 elements, its use by a later op (a ref of
// its own, as the readers make one per use) reads 384, and that op's output
// follows too. Catches the derived sizes left as recorded (the check then
// refuses the composition) and a use of the tensor not given the new shape.
TEST(ScaleDim, SizesLibtorchDerivesFollowTheSubstitution) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const trace::Value a = b.tensor({64}), w = b.tensor({64, 2}), flat = b.tensor({192});
  trace::Value list;
  list.kind = trace::ValueKind::kList;
  list.type = t.strings.intern("GenericList[Tensor(float),Tensor(float)]");
  list.items = {a, w};
  b.op("aten::flatten_dense_tensors(Tensor[] tensors) -> Tensor", {list}, {flat});
  const trace::Value use = trace::makeTensor(t, t.tensors[flat.tensor], "Tensor(float)");
  const trace::Value doubled = b.tensor({192});
  b.op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {use, use}, {doubled});
  trace::Trace scaled = b.finish();
  const ScaleStats s = scaleDimension(scaled, 64, 128);
  EXPECT_EQ(s.derived, 2u);
  const auto shapeOf = [&](const trace::Value& v) { return scaled.list(scaled.tensors[v.tensor].shape); };
  EXPECT_EQ(shapeOf(flat), std::vector<int64_t>{384});
  EXPECT_EQ(shapeOf(use), std::vector<int64_t>{384});
  EXPECT_EQ(scaled.tensors[use.tensor].numel, 384u);
  EXPECT_EQ(shapeOf(doubled), std::vector<int64_t>{384});
  EXPECT_NO_THROW(checkShapes(scaled));
}

// ddp2 (fleet_samples/README: an MLP of 3 x Linear(1024, 1024) + Linear(1024,
// 16) under DDP) keeps its gradients in two flat buckets that as_strided
// views tile, in the reducer's order: the head's bias, weight, then the last
// hidden layer's bias, weight; and the first two layers' bias, weight each.
// At hidden 1536 the views still tile them, at the running sums of the new
// parameter sizes, and the all_reduces carry the new totals.
TEST(ScaleDim, Ddp2GradientBucketsAreLaidOutAnew) {
  trace::Trace t = trace::readTrace(std::string(ETB_SOURCE_DIR) + "/fleet_samples/ddp2/ddp2.rank0.et.json.gz");
  const int64_t h = 1536, classes = 16;
  const std::vector<int64_t> head = {classes, classes * h, h, h * h}, body = {h, h * h, h, h * h};
  auto runningSums = [](const std::vector<int64_t>& sizes) {
    std::vector<int64_t> at(1, 0);
    for (int64_t s : sizes) at.push_back(at.back() + s);
    return at;  // the offsets, then the total
  };
  const auto head_at = runningSums(head), body_at = runningSums(body);
  const ScaleStats s = scaleDimension(t, 1024, h);
  EXPECT_EQ(s.repacked, 2u);
  std::vector<uint64_t> elems;
  for (const trace::CommInfo& c : t.comms) elems.push_back(c.in_elems);
  EXPECT_EQ(elems, (std::vector<uint64_t>{static_cast<uint64_t>(head_at.back()),
                                          static_cast<uint64_t>(body_at.back())}));
  size_t views = 0;
  for (const trace::Node& n : t.nodes) {
    if (t.name(n) != "aten::as_strided" || n.inputs.size() < 4) continue;
    const int64_t base = t.list(t.tensors[n.inputs[0].tensor].shape).at(0);
    const auto& at = base == head_at.back() ? head_at : body_at;
    if (base != head_at.back() && base != body_at.back()) continue;
    const int64_t offset = n.inputs[3].kind == trace::ValueKind::kInt ? n.inputs[3].i : 0;
    const auto k = std::find(at.begin(), at.end() - 1, offset);
    ASSERT_NE(k, at.end() - 1) << "node " << n.id << ": offset " << offset << " is no parameter's";
    const trace::TensorRef& view = t.tensors[n.outputs.at(0).tensor];
    EXPECT_EQ(static_cast<int64_t>(view.offset), offset) << "node " << n.id;
    EXPECT_EQ(static_cast<int64_t>(view.numel), *(k + 1) - *k) << "node " << n.id;
    ++views;
  }
  EXPECT_EQ(views, 8u) << "the four views of each bucket, once each";
  EXPECT_NO_THROW(checkShapes(t));
}

// A reshape's sizes hold its input's elements, group by group; the groups
// are worked out here by hand. Batch 8 -> 16 throughout.
TEST(ScaleDim, ReshapeSizesFollowTheInputDimsTheyMergeOrSplit) {
  // [seq 32, batch 8, 512] merged to [seq * batch, 512].
  EXPECT_EQ(refitReshape({32, 8, 512}, {256, 512}, {32, 16, 512}, 8), (std::vector<int64_t>{512, 512}));
  // [seq 128, batch 8, 256] split into heads: [128, batch * 4 heads, 64].
  EXPECT_EQ(refitReshape({128, 8, 256}, {128, 32, 64}, {128, 16, 256}, 8),
            (std::vector<int64_t>{128, 64, 64}));
  // [seq * batch, 256] back to [128, 8, 256]: the 8 grows, not the 128.
  EXPECT_EQ(refitReshape({1024, 256}, {128, 8, 256}, {2048, 256}, 8), (std::vector<int64_t>{128, 16, 256}));
  // Unchanged input: the sizes as recorded; -1 is libtorch's to infer.
  EXPECT_EQ(refitReshape({4, 6}, {24}, {4, 6}, 4), (std::vector<int64_t>{24}));
  EXPECT_TRUE(refitReshape({8, 6}, {-1}, {16, 6}, 8).empty());
}

// Int arguments that name a dimension or a position along one stay, and so
// do dtype codes: at 2=4 a transpose keeps dim0=2, select's index 2 along
// the last dim (of 3) is still 2, and to(dtype=2) still casts to int16.
TEST(ScaleDim, DimensionAndIndexArgumentsAreNotSizes) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const trace::Value x = b.tensor({2, 5, 3}), xt = b.tensor({3, 5, 2}, trace::DType::kFloat);
  b.op("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
       {x, trace::makeInt(t, 2), trace::makeInt(t, 0)}, {xt});
  const trace::Value x2 = trace::makeTensor(t, t.tensors[x.tensor], "Tensor(float)"), col = b.tensor({2, 5});
  b.op("aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
       {x2, trace::makeInt(t, 2), trace::makeInt(t, 2)}, {col});
  // ScalarType 2 is int16 (c10's code), not a size: to(int16) stays int16.
  const trace::Value col2 = trace::makeTensor(t, t.tensors[col.tensor], "Tensor(float)");
  const trace::Value shorts = b.tensor({2, 5}, trace::DType::kInt16);
  b.op("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
       "MemoryFormat? memory_format=None) -> Tensor(a)",
       {col2, trace::makeInt(t, 2)}, {shorts});
  trace::Trace c = b.finish();
  scaleDimension(c, 2, 4);
  for (const trace::Node& n : c.nodes) {
    if (c.name(n) == "aten::transpose") {
      EXPECT_EQ(n.inputs[1].i, 2) << "dim0";
      EXPECT_EQ(c.list(c.tensors[n.outputs[0].tensor].shape), (std::vector<int64_t>{3, 5, 4}));
    }
    if (c.name(n) == "aten::select") {
      EXPECT_EQ(n.inputs[1].i, 2) << "dim";
      EXPECT_EQ(n.inputs[2].i, 2) << "index";
    }
    if (c.name(n) == "aten::to") {
      EXPECT_EQ(n.inputs[1].i, 2) << "dtype";
    }
  }
  EXPECT_NO_THROW(checkShapes(c));
}

TEST(ScaleDim, DimensionThatDoesNotOccurIsRejected) {
  trace::Trace t = fleetSample("mlp");
  EXPECT_THROW(scaleDimension(t, 777, 778), InputError);
  EXPECT_THROW(scaleDimension(t, 1, 2), InputError);
}

// d_model 256 = 4 heads x 64: a head size of 96 no longer splits 256.
TEST(ScaleDim, BrokenAttentionHeadSplitNamesTheNode) {
  trace::Trace t = fleetSample("transformer");
  scaleDimension(t, 64, 96);
  try {
    checkShapes(t);
    FAIL() << "the check must reject a broken head split";
  } catch (const InputError& e) {
    ASSERT_NE(e.loc().node_id, SourceLoc::kNoNode);
    const trace::Node* n = t.find(e.loc().node_id);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(e.loc().node_name, t.name(*n));
    EXPECT_NE(std::string(e.what()).find("[128, 32, 96]"), std::string::npos) << e.what();
  }
}

// Message sizes follow a substituted dimension and survive a write/read.
TEST(ScaleDim, MessageSizesFollowTheirTensors) {
  const std::string dir = test::makeTempDir("compose_msg");
  std::string out;
  ASSERT_EQ(test::runCommand("python3 " + std::string(ETB_SOURCE_DIR) + "/tests/mpi/make_comm_et.py groups " + dir, &out), 0)
      << out;
  trace::Trace t = trace::readTrace(dir + "/groups.rank0.et.json");
  std::vector<uint64_t> before;
  for (const auto& c : t.comms) before.push_back(c.in_elems);
  // make_comm_et.py: the first world all_reduce moves 4096 floats, the
  // all_to_all of group "1" 2048.
  ASSERT_EQ(before.front(), 4096u);
  const ScaleStats s = scaleDimension(t, 4096, 8192);
  EXPECT_EQ(s.comms, t.comms.size());
  trace::writeTrace(t, dir + "/scaled.json");
  const trace::Trace back = trace::readTrace(dir + "/scaled.json");
  for (size_t i = 0; i < back.comms.size(); ++i) {
    EXPECT_EQ(back.comms[i].in_elems, before[i] == 4096 ? 8192u : before[i]) << "comm " << i;
    EXPECT_EQ(back.comms[i].bytes, back.comms[i].in_elems * 4) << "comm " << i;
  }
}

TEST(Dtype, Bf16ConvertsTensorsTypesAndDtypeArguments) {
  trace::Trace t = fleetSample("mlp");
  uint64_t floats = 0;
  for (const auto& r : t.tensors) floats += r.dtype == trace::DType::kFloat ? 1 : 0;
  const DtypeStats s = changeDtype(t, trace::DType::kFloat, trace::DType::kBFloat16);
  EXPECT_EQ(s.tensors, floats);
  for (const auto& r : t.tensors) {
    EXPECT_NE(r.dtype, trace::DType::kFloat);
    if (r.dtype == trace::DType::kBFloat16) {
      EXPECT_EQ(r.itemsize, 2u);
    }
  }
  for (const trace::Node& n : t.nodes) {
    for (const trace::Value& v : n.inputs) {
      EXPECT_EQ(t.str(v.type).find("Tensor(float)"), std::string::npos) << "node " << n.id;
    }
  }
  // The check compares dtypes too: zeros(dtype=None) must now name bf16.
  EXPECT_NO_THROW(checkShapes(t));
  EXPECT_THROW(changeDtype(t, trace::DType::kFloat, trace::DType::kHalf), InputError);
}

// A UNet's ConvTranspose2d converted to bf16: libtorch 1.13 has no meta
// kernel for it and its CPU kernel in BFloat16 computes a plain convolution
// ([2, 16, 4, 4] where the trace says [2, 16, 16, 16]), so the check must
// not ask that kernel. The output shape comes from the recording in float32.
// A spectrogram's magnitude (zoo_speech: abs of stft's complex output) is
// float whatever the conversion does, since complex64 has no bfloat16 kind;
// by type promotion its product with a now-bfloat16 weight is float too.
// Both outputs and the product's input take those dtypes, in ref and type
// string; the weight is converted. Before, the check refused the abs: "output
// 0 has dtype Float but the trace claims bfloat16".
TEST(Dtype, OutputsTakeTheDtypeLibtorchDerives) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const trace::Value spec = b.tensor({4, 3}, trace::DType::kComplexFloat), mag = b.tensor({4, 3});
  const trace::Value w = b.tensor({4, 3}), y = b.tensor({4, 3});
  b.op("aten::abs(Tensor self) -> Tensor", {spec}, {mag});
  const trace::Value mag_in = trace::makeTensor(t, t.tensors[mag.tensor], "Tensor(float)");
  b.op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {mag_in, w}, {y});
  trace::Trace c = b.finish();
  const DtypeStats s = changeDtype(c, trace::DType::kFloat, trace::DType::kBFloat16);
  EXPECT_EQ(s.derived, 2u);
  const trace::Node* abs = nullptr;
  const trace::Node* mul = nullptr;
  for (const trace::Node& n : c.nodes) {
    if (c.name(n) == "aten::abs") abs = &n;
    if (c.name(n) == "aten::mul") mul = &n;
  }
  ASSERT_TRUE(abs && mul);
  const auto dtypeOf = [&](const trace::Value& v) { return c.tensors[v.tensor].dtype; };
  EXPECT_EQ(dtypeOf(abs->outputs[0]), trace::DType::kFloat);
  EXPECT_EQ(c.str(abs->outputs[0].type), "Tensor(float)");
  EXPECT_EQ(dtypeOf(mul->inputs[0]), trace::DType::kFloat);
  EXPECT_EQ(dtypeOf(mul->inputs[1]), trace::DType::kBFloat16);
  EXPECT_EQ(c.str(mul->inputs[1].type), "Tensor(c10::BFloat16)");
  EXPECT_EQ(dtypeOf(mul->outputs[0]), trace::DType::kFloat);
  EXPECT_EQ(c.tensors[mul->outputs[0].tensor].itemsize, 4u);
  EXPECT_NO_THROW(checkShapes(c));
}

TEST(Dtype, Bf16TransposedConvolutionPassesTheShapeCheck) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  auto ints = [&](std::vector<int64_t> xs) {
    trace::Value v;
    v.kind = trace::ValueKind::kList;
    for (int64_t x : xs) v.items.push_back(trace::makeInt(t, x));
    return v;
  };
  b.op("aten::conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
       "int[2] padding=0, int[2] output_padding=0, int groups=1, int[2] dilation=1) -> Tensor",
       {b.tensor({2, 16, 8, 8}), b.tensor({16, 16, 2, 2}), b.tensor({16}), ints({2, 2}), ints({0, 0}),
        ints({0, 0}), trace::makeInt(t, 1), ints({1, 1})},
       {b.tensor({2, 16, 16, 16})});
  trace::Trace bf16 = b.finish();
  EXPECT_NO_THROW(checkShapes(bf16));  // float32: the trace is right
  EXPECT_EQ(changeDtype(bf16, trace::DType::kFloat, trace::DType::kBFloat16).tensors, 4u);
  EXPECT_NO_THROW(checkShapes(bf16));
}

// dist.all_gather of one loss per rank (wild_ddp.py) at 4 ranks has 4
// elements in all: at 8 ranks the kept full size cannot be resharded. The
// refusal must name the node and say why, not only that 4 does not divide.
// --dtype fp16 of a trace that samples (wild_losses): libtorch 1.13's CPU
// multinomial refuses Half as "multinomial is not implemented for half on
// CPU", a wording the dtype test did not know, so the check failed the
// composition where et_replay runs the op in float32.
TEST(Dtype, Fp16OpWithoutCpuKernelIsCheckedInFloat32WhateverItsMessage) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  b.op("aten::multinomial(Tensor self, int num_samples, bool replacement=False, *, "
       "Generator? generator=None) -> Tensor",
       {b.tensor({5}), trace::makeInt(t, 3), trace::makeBool(t, true), trace::makeNone(t)},
       {b.tensor({3}, trace::DType::kInt64)});
  trace::Trace half = b.finish();
  EXPECT_EQ(changeDtype(half, trace::DType::kFloat, trace::DType::kHalf).tensors, 1u);
  EXPECT_NO_THROW(checkShapes(half));
}

TEST(WorldSize, PerRankAllGatherThatCannotReshardSaysWhy) {
  test::TraceBuilder b;
  trace::CommInfo c;
  c.type = trace::CommType::kAllGather;
  c.in_elems = 1;
  c.out_elems = 4;
  c.dtype = trace::DType::kFloat;
  const trace::NodeId id = b.collective(50, c);
  const trace::Trace t = b.finish();
  try {
    changeWorldSize({t, t, t, t}, 8);
    ADD_FAILURE() << "a 4-element all_gather was resharded over 8 ranks";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().node_id, id);
    EXPECT_NE(std::string(e.what()).find("per-rank values"), std::string::npos) << e.what();
  }
}

TEST(WorldSize, Ddp2ToFourKeepsGradientBuckets) {
  std::vector<trace::Trace> in;
  for (int r = 0; r < 2; ++r) {
    in.push_back(trace::readTrace(std::string(ETB_SOURCE_DIR) + "/fleet_samples/ddp2/ddp2.rank" +
                                  std::to_string(r) + ".et.json.gz"));
  }
  WorldStats st;
  const auto out = changeWorldSize(in, 4, &st);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(st.old_world, 2);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(out[r].rank, static_cast<int64_t>(r));
    ASSERT_EQ(out[r].process_groups.size(), 1u);
    EXPECT_EQ(out[r].process_groups[0].ranks, (std::vector<int64_t>{0, 1, 2, 3}));
    std::vector<uint64_t> elems;
    for (const auto& c : out[r].comms) elems.push_back(c.in_elems);
    // README: buckets of 1,066,000 and 2,099,200 floats.
    EXPECT_EQ(elems, (std::vector<uint64_t>{1066000, 2099200}));
  }
}

TEST(WorldSize, SubGroupsTileAndShardsResize) {
  const std::string dir = test::makeTempDir("compose_groups");
  std::string out;
  ASSERT_EQ(test::runCommand("python3 " + std::string(ETB_SOURCE_DIR) +
                                 "/tests/composer/make_sharded_et.py " + dir,
                             &out),
            0)
      << out;
  std::vector<trace::Trace> in;
  for (int r = 0; r < 2; ++r) in.push_back(trace::readTrace(dir + "/sharded.rank" + std::to_string(r) + ".et.json"));
  const auto four = changeWorldSize(in, 4);
  ASSERT_EQ(four.size(), 4u);
  for (const trace::Trace& t : four) {
    for (const trace::CommInfo& c : t.comms) {
      const std::string type(trace::commTypeName(c.type));
      // make_sharded_et.py: full tensors of 4096 elements, rows of 16.
      if (type == "all_gather") {
        EXPECT_EQ(c.in_elems, 4096u / 4);
      } else if (type == "reduce_scatter") {
        EXPECT_EQ(c.out_elems, 4096u / 4);
      } else if (type == "all_to_allv") {
        EXPECT_EQ(c.in_splits, (std::vector<int64_t>{64, 64, 64, 64}));
      }
    }
    EXPECT_NO_THROW(checkShapes(t));
  }
  EXPECT_THROW(changeWorldSize(in, 3), InputError) << "4096 does not divide by 3";
}

}  // namespace
}  // namespace etb::compose
