// SPDX-License-Identifier: MIT
//
// The time of one operator on the profiled machine, from its recorded
// shapes alone (nothing of the trace is executed). Each op kind has a model
// family chosen for how its kernels behave on a CPU:
//   gemm / bmm     FLOPs over a throughput interpolated in (m, n, k) shape
//                  space (skinny GEMMs run far below peak, so no single
//                  roofline fits them);
//   conv           the same over the implicit-GEMM shape of the convolution,
//                  forward and backward measured separately, contiguous and
//                  channels-last ("conv:channels_last", layout_model.h);
//   embedding_bag  time per looked-up row by table size, width, pooling and
//                  index distribution (cache reuse of hot rows is the point);
//                  the dense backward as fill + sort + a cost per lookup and
//                  one per distinct row (the distribution's expected count),
//                  scaled to the measured calls of the nearest tables, plus
//                  their flushed-cache extra by the gradient's DRAM share;
//   foreach        a per-tensor cost (fitted per overload to _foreach_ loops) plus the
//                  lists' bytes on the in-place curve;
//   pool           2-D max/avg pooling: a time per output element that grows
//                  with the window, from curves at 2x2 and 3x3 windows
//                  (max_pool2d's backward: its zero fill and scatter, by the
//                  elements of both gradients);
//   memory         bytes moved over a measured size curve for its class
//                  (elementwise, unary, transcendental, reduction by shape
//                  family and width, copy, rng, and measured element
//                  classes such as masked_fill), less the first touch of outputs the benchmark had
//                  to map afresh (the predictor adds first touches where
//                  its heap model says the replay pays them);
//   view           the dispatcher cost of a call that touches no data.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model/trace.h"
#include "predictor/hw_profile.h"
#include "predictor/interp.h"
#include "predictor/op_shapes.h"

namespace etb::predict {

struct OpEstimate {
  double us = 0;
  std::string family;  // "gemm", "conv", "memory:unary", "view", ...
  // No model knows this op: `us` is a bytes-moved guess, and a caller that
  // has the op's recorded children should sum theirs instead.
  bool fallback = false;
  // Of `us`, what extra calls inside the op cost whatever the machine's
  // speed (a mixed-type input's cast: HwProfile::cast_input_us), which the
  // slowdown leaves unscaled as it does a call's dispatch.
  double fixed_us = 0;
};

class OpModel {
 public:
  // `index_dist` as et_replay takes it: "uniform" or "zipf:ALPHA";
  // `comm_backend` the backend whose collective curves collectiveUs reads
  // (the one et_replay would replay the trace on).
  OpModel(const HwProfile& profile, std::string index_dist, std::string comm_backend = "mpi");

  // `cold`: the share of the op's input bytes that come from DRAM
  // (reuse_model.h); memory-bound ops and lookups then read their "@cold"
  // curves for that share. `l3`: the share last touched more than L2 ago
  // but still in the LLC; memory-bound ops add their "@l3" curve's extra
  // time for it.
  // `channels_last`: bit a set when input argument a is a channels-last
  // 4-D tensor (layout_model.h: from recorded strides, or carried through a
  // trace without them). `transposed`: bit a set when input argument a is a
  // 2-D tensor stored column by column (layout_model.h's transposedInputs).
  OpEstimate estimate(const trace::Trace& trace, const trace::Node& node, double cold = 0,
                      double l3 = 0, uint32_t channels_last = 0, uint32_t transposed = 0) const;

  // Time of one collective moving `algo_bytes` (nccl-tests size) on a group
  // of `group_size` ranks: the measured curve of that type, from the
  // nearest measured group size scaled by the ring factor (that size in
  // `read_group` when given). -1 when the profile has no curve for `type`.
  double collectiveUs(const std::string& type, int group_size, double algo_bytes,
                      int* read_group = nullptr) const;
  // True when the profile has curves of the backend this model reads.
  bool hasCollectives() const { return !collectives_.empty(); }

 private:
  void fitForeach();
  void buildCurves();
  // In `dtype`'s points where the profile measured that type, else in
  // float32's; `typed` (optional): ":<type>" when a reduced-precision
  // type's were read, else empty. `b_transposed`: B passed as W.t() reads
  // the gemm_nt points of the type read where the profile has them;
  // `read_nt` (optional): whether it did.
  double gemmUs(double m, double n, double k, trace::DType dtype = trace::DType::kFloat,
                std::string* typed = nullptr, bool b_transposed = false, bool* read_nt = nullptr) const;
  double bmmUs(const GemmDims& d, trace::DType dtype = trace::DType::kFloat,
               std::string* typed = nullptr) const;
  // `family` (optional): "conv", with ":channels_last" when the
  // channels-last rates were read and ":<type>" when a reduced-precision
  // type's were.
  double convUs(const OpShapes& shapes, bool backward, std::string* family = nullptr) const;
  // Fused attention kernels (flash, memory-efficient, cuDNN) as the GEMMs
  // they run on the bmm curve; nullopt for other ops or unreadable shapes.
  std::optional<OpEstimate> attentionEstimate(const std::string& name, const OpShapes& shapes) const;
  double embeddingUs(const OpShapes& shapes, bool backward, double cold) const;
  double embeddingBackwardUs(double rows, double dim, double lookups, double cold) const;
  double tableFillUs(double bytes) const;
  double measuredFillUs(const EmbeddingPoint& e) const;
  double zeroFillUs(double bytes) const;
  OpEstimate reductionEstimate(const OpShapes& shapes, double cold, double l3) const;
  // A softmax (forward or backward) over its last dim on its "op:NAME:rows:R"
  // curves, `curve` being "op:NAME"; nullopt over another dim or from a
  // profile without them.
  std::optional<OpEstimate> softmaxRowsEstimate(const std::string& name, const std::string& curve,
                                                const OpShapes& shapes, double cold, double l3) const;
  // At `bytes`, log-linear in log `length` between the two curves of `at`
  // (length, curve; sorted, not empty) nearest it, clamped beyond them.
  double lengthCurvesUs(const std::vector<std::pair<double, std::string>>& at, double length,
                        double bytes, double cold, double l3) const;
  // index_add_ / scatter_add_ from their curves (hw_profile.h,
  // kIndexAddRows); nullopt for other ops or a profile without them.
  std::optional<OpEstimate> indexSumEstimate(const std::string& name, const OpShapes& shapes,
                                             double cold, double l3) const;
  // 2-D pooling from its "pool:" curves; nullopt for other ops or a
  // profile without them.
  std::optional<OpEstimate> poolEstimate(const std::string& name, const OpShapes& shapes) const;
  // `op`: "aten::_foreach_mul_.Scalar" (name.overload).
  double foreachUs(const std::string& op, const OpShapes& shapes, double cold, double l3) const;
  OpEstimate memoryEstimate(const std::string& name, const OpShapes& shapes, double cold,
                            double l3) const;
  double memoryUs(const std::string& cls, double bytes, double cold = 0, double l3 = 0) const;
  // Batch norm backward's planes at the profile's time per plane of their
  // size (HwProfile::batchnorm_backward_planes); 0 without the table.
  double batchNormPlanesUs(const OpShapes& shapes) const;
  // A training batch norm forward's four parts (HwProfile::batchnorm_
  // forward) for its input [n, c, plane...]; 0 without the points, for a
  // channels-last input (another kernel) or for an inference-mode call.
  double batchNormForwardUs(const std::string& name, const OpShapes& shapes) const;
  void fitBatchNormForward();
  // A conv's hot-loop curve re-reads its inputs from L1/L2; in a replay
  // its `cold` share comes from DRAM and its `l3` share from the LLC: the
  // extra time a stream of the same bytes pays from there (the unary
  // kernel's "@cold" and "@l3" curves), in the proportion of its time
  // (`op_us`) that streaming its inputs takes. 0 on a GPU profile.
  double inputsFromAfarUs(const OpShapes& shapes, double op_us, double cold, double l3) const;
  double castInputsUs(const OpShapes& shapes, double* copied) const;
  double callExtraUs(const std::string& name, const OpShapes& shapes) const;
  double biasCopyUs(const std::string& name, const OpShapes& shapes) const;
  OpEstimate kernelEstimate(const trace::Trace& trace, const trace::Node& node, const std::string& name,
                            OpShapes& shapes, double cold, double l3, uint32_t channels_last,
                            uint32_t transposed) const;
  double viewCallUs(const std::string& name) const;
  double coldExtraUs(const std::string& cls, double bytes) const;
  double l3ExtraUs(const std::string& cls, double bytes) const;
  std::string rngClass(const OpShapes& shapes) const;

  const HwProfile& hw_;
  std::string dist_, comm_;
  // GEMM and batched GEMM rates by element type (trace::dtypeName).
  std::map<std::string, std::vector<KnnPoint<3>>> gemm_;
  std::map<std::string, std::vector<KnnPoint<3>>> gemm_nt_;  // B transposed (HwProfile::gemm_nt), by type
  // Convolutions in (batch, output pixels, n, k, stride): a small feature
  // map or a strided window runs at another rate than a large, dense one of
  // the same implicit-GEMM shape.
  // One set per input layout ([1]: channels-last, from the points that
  // measured it), each with its floors below.
  struct ConvRates;
  // The profile's conv with the fewest FLOPs (its times in each direction),
  // overall and in each class of kernel path (convClass: 1x1, other dense
  // windows, depthwise, grouped): a conv with fewer FLOPs than its class's
  // least costs at least as much, its fixed cost (oneDNN's primitive lookup
  // and layout reorders, or the native path's per-sample loop), which a
  // rate extrapolated to a few kFLOP leaves out. A dense 3x3 on an 8 x 8 map
  // costs oneDNN's 30-40 us where a 1x1 on a 1 x 1 map costs 7. The overall
  // least stands in for a class the profile has no point of.
  struct LeastConv {
    ConvPoint point{};
    double flops = 0;
  };
  struct ConvRates {
    std::array<double ConvPoint::*, 3> times;  // forward, backward input, backward weight
    std::array<std::vector<KnnPoint<6>>, 3> rates;
    LeastConv least;
    std::array<LeastConv, 4> class_least{};
    // Every point of each class: a conv costs at least the fastest of its
    // class with as many FLOPs or more (OpModel::convUs).
    std::array<std::vector<LeastConv>, 4> class_points{};
    // For each direction, the median over the profile's convolutions that
    // take libtorch's per-sample GEMM path (nativeGemmConv) of their time
    // over that path's GEMMs on the GEMM curve; 0: no such point measured.
    std::array<double, 3> per_sample_gemm{};
  };
  using ConvSets = std::array<ConvRates, 2>;
  static ConvSets emptyConvSets() {
    return {ConvRates{{&ConvPoint::fwd_us, &ConvPoint::bwd_input_us, &ConvPoint::bwd_weight_us}, {}, {}, {}, {}, {}},
            ConvRates{{&ConvPoint::fwd_cl_us, &ConvPoint::bwd_input_cl_us, &ConvPoint::bwd_weight_cl_us},
                      {}, {}, {}, {}, {}}};
  }
  // The per-sample GEMMs of a convolution on libtorch's native path, in
  // each direction (forward, input gradient, weight gradient), from the
  // float32 GEMM curve; zeros where the profile has none.
  std::array<double, 3> perSampleGemmUs(const ConvShape& s) const;
  void fitPerSampleGemm();
  // By element type (trace::dtypeName), as the GEMM rates; transposed
  // convolutions' points apart (ConvPoint::transposed).
  std::map<std::string, ConvSets> conv_, conv_transposed_;
  // Batch norm's plane table: the run of small sizes 1..end exactly, and
  // beyond it the ladders of sizes the vector width divides ([1]) or not.
  double bn_small_end_ = 0;
  std::array<std::vector<SizePoint>, 2> bn_ladders_;
  // Batch norm's forward: us = fixed + per channel x c + per plane x
  // n x c (planes of more than one element) + per element x n x c x plane.
  std::array<double, 4> bn_forward_{};
  bool bn_forward_fitted_ = false;
  std::map<std::string, std::vector<KnnPoint<4>>> bmm_;
  void fitEmbedding();
  using EmbeddingTables = std::map<std::pair<int64_t, int64_t>, std::vector<const EmbeddingPoint*>>;
  void fitEmbeddingBackward(const EmbeddingTables& family, const EmbeddingTables& both);
  // embedding_bag: time = a fixed part + a part per looked-up row. The
  // fixed part of the dense backward is the zero-filled [rows, dim]
  // gradient (a curve over its bytes); the per-row part depends on where
  // the rows live in the cache hierarchy (table size, width, distribution).
  std::vector<KnnPoint<2>> emb_fwd_fixed_, emb_fwd_row_, emb_bwd_row_;
  std::vector<KnnPoint<2>> emb_cold_row_;  // per row, table flushed
  // log us per distinct row looked up, its lines evicted (fwd_rows_cold_us)
  std::vector<KnnPoint<2>> emb_row_miss_;
  std::vector<SizePoint> emb_bwd_fill_;
  // GPU profiles: per table, log(us) as a line in log(lookups) (a GPU's
  // backward grows far slower than its lookups until the device fills).
  std::vector<KnnPoint<2>> emb_bwd_log_at1_, emb_bwd_log_slope_;
  // The dense backward by mechanism (profiles with the sort curve): the
  // fill curve, the sort curve, and per table a cost per lookup and one per
  // distinct row touched (us, nearest tables by size and width).
  std::vector<KnnPoint<2>> emb_bwd_lookup_, emb_bwd_unique_;
  // What the mechanism misses, per table of the distribution asked for:
  // log(measured / mechanism) by log lookups, and the extra microseconds of
  // a call with the caches flushed (fixed and per lookup).
  struct TableRatio {
    std::array<double, 2> x;
    std::vector<std::pair<double, double>> log_ratio;
  };
  std::vector<TableRatio> emb_bwd_ratio_;
  std::vector<KnnPoint<2>> emb_bwd_cold_fixed_, emb_bwd_cold_row_;
  struct ForeachFit {
    double base = 0, tensor = 0;  // fixed and per-tensor cost
  };
  std::map<std::string, ForeachFit> foreach_;  // _foreach_ by op.overload timed
  // The memory-bound curves without first-touch costs, and the collective
  // curves of comm_ by type and group size, each sorted by bytes once.
  std::map<std::string, std::vector<SizePoint>> warm_;
  std::map<std::string, std::map<int, std::vector<SizePoint>>> collectives_;
};

// How many distinct rows `lookups` indices drawn from `dist` ("uniform" or
// "zipf:ALPHA", as et_replay draws them) touch in a table of `rows`, in
// expectation: the sum over rows of the chance that some lookup hits it.
double expectedUniqueRows(double rows, double lookups, const std::string& dist);

// The op as et_replay resolves it ("aten::mm"; `overload` set when asked):
// the recorded schema's name, else the node's. They differ where Chakra's
// converter split an op around its kernels and numbered the parts
// ("aten::copy_(0)" with the schema of aten::copy_).
std::string opKind(const trace::Trace& trace, const trace::Node& node, std::string* overload = nullptr);

}  // namespace etb::predict
