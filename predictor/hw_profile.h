// SPDX-License-Identifier: MIT
//
// A measured description of one machine, independent of any trace: what
// et_profile_hw writes and et_predict reads (schemas/hw_profile.schema.json).
// Every figure is a raw measurement (shape or size -> microseconds); the
// models in op_model.h interpolate between them, so a profile can be
// re-used with a better model later without measuring again.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace etb::predict {

struct HwIdentity {
  std::string host;
  std::string cpu_model;
  int cores = 0;
  std::string device = "cpu";
  std::string device_model;  // the GPU's name ("NVIDIA H100 80GB HBM3"); "" on a CPU
  int threads = 1;  // intra-op threads the figures were taken with
  std::string torch_version;
  std::string mpi_version;
  std::string etbench_version;
  std::string created;  // UTC, ISO 8601
  bool quick = false;
  // The 1-minute load average, the higher of its readings at the start and
  // the end of the measurement; -1 when not recorded. It counts the
  // profile's own threads: see otherLoad().
  double load_avg = -1;
  // Wall seconds of each part of the measurement, in the order measured (a
  // part measured twice adds up); empty when not recorded.
  std::vector<std::pair<std::string, double>> sections_s;
  double tookSeconds() const;
};

// The load beside the profile's own: load_avg less the threads the
// measurement ran (the collectives' extra ranks are brief). 0 when not
// recorded.
double otherLoad(const HwIdentity& id);
// Other work kept more than half the cores the profile left free busy: its
// figures were taken on shared cores and caches (a profile beside two builds
// measured the embedding backward 1.5-2.4x its quiet figures).
bool measuredBesideOtherWork(const HwIdentity& id);

// One GEMM (or batched GEMM) measurement: C[b,m,n] = A[b,m,k] B[b,k,n],
// in `dtype` (trace::dtypeName: "float32", "bfloat16", "float16").
struct GemmPoint {
  int64_t b = 1, m = 0, n = 0, k = 0;
  double us = 0;
  std::string dtype = "float32";
};

// One 2-D convolution: forward, and the two halves of convolution_backward
// measured apart (grad_input alone; grad_weight with the bias gradient),
// since a trace's first layer asks for no grad_input and the halves run
// at very different rates (col2im vs a GEMM over the batch).
struct ConvPoint {
  int64_t n = 0, c = 0, h = 0, w = 0, oc = 0, kh = 0, kw = 0, stride = 1, groups = 1;
  double fwd_us = 0, bwd_input_us = 0, bwd_weight_us = 0;
  // The same with the input channels-last (NHWC strides, as a network
  // converted with to(memory_format=channels_last) or one that permutes
  // around a LayerNorm, ConvNeXt's, hands it on); 0 where not measured.
  // oneDNN takes another kernel path: a depthwise 7x7 backward on a 2x2 map
  // of 768 channels took 15 ms against 1.1 contiguous, one of 96 channels on
  // 16x16 maps 1.0 ms against 3.4.
  double fwd_cl_us = 0, bwd_input_cl_us = 0, bwd_weight_cl_us = 0;
  // Input, weight and gradient in this type (GemmPoint's names): autocast
  // runs convolutions in bfloat16, on other kernels (resnet18 under CPU
  // autocast was predicted 28% under at float32's rates here).
  std::string dtype = "float32";
  // A transposed convolution (ConvTranspose2d): weight [c, oc / groups, kh,
  // kw], each of the n x h x w input pixels into oc x kh x kw outputs. CPU
  // libtorch runs it on other kernels than the forward grid's (an
  // autoencoder's stride-2 4x4 decoder backward: 6.7 GFLOP/s where forward
  // convs of its FLOPs ran 3-5x that).
  bool transposed = false;
  bool hasChannelsLast() const { return fwd_cl_us > 0 && bwd_input_cl_us > 0 && bwd_weight_cl_us > 0; }
};

// A memory-bound kernel at one size: `bytes` read + written in `us`.
struct SizePoint {
  double bytes = 0;
  double us = 0;
};

// embedding_bag (sum pooling) over a [rows, dim] table: `batch` bags of
// `pooling` indices drawn from `dist` ("uniform" or "zipf:ALPHA").
struct EmbeddingPoint {
  int64_t rows = 0, dim = 0, batch = 0, pooling = 0;
  std::string dist = "uniform";
  double fwd_us = 0, bwd_us = 0;
  double fwd_cold_us = 0;  // forward with the table flushed from the caches
  // Dense backward with the caches flushed before each call; 0 where not
  // measured (a gradient too large for the LLC is as cold in the hot loop).
  double bwd_cold_us = 0;
  // The backward's zero-filled [rows, dim] gradient alone (at::zeros), timed
  // in the same section: with its page faults and unmapping where glibc maps
  // it afresh per call. 0 where not measured (older profiles, a GPU).
  double fill_us = 0;
  // Forward with only the rows it looks up evicted (clflush): the code and
  // the indices warm. 0 where not measured (older profiles, a GPU, a CPU
  // without a line flush).
  double fwd_rows_cold_us = 0;
};

// A _foreach_ op over `tensors` tensors holding `elems` floats in total
// per list: `op` ("aten::_foreach_mul_.Scalar") names the overload timed,
// each of which costs its own per tensor (on libtorch 1.13's CPU one
// number times a list cost 1.5-1.8 us a tensor, a list times a list
// 0.3-0.7). `bytes`: what a trace records for the call (its input lists
// and any output list); 0 in profiles before it, which timed
// _foreach_add_.List alone (then 12 per element).
inline constexpr const char* kForeachList = "aten::_foreach_add_.List";
struct ForeachPoint {
  int64_t tensors = 0, elems = 0;
  double us = 0;
  std::string op = kForeachList;
  double bytes = 0;
};

// A collective on a group of `group_size` ranks, `bytes` per rank, through
// one communication backend ("mpi", "gloo"): et_replay replays a trace on
// the backend its process groups recorded, and gloo over loopback TCP runs
// at a fraction of MPI's shared-memory rate, so each has its own curves.
struct CollectivePoint {
  std::string type;  // "all_reduce", "all_gather", "all_to_all", ...
  int group_size = 0;
  double bytes = 0;
  double us = 0;
  std::string backend = "mpi";
};

// What fresh memory costs: et_replay's outputs come from glibc malloc, which
// returns freed memory to the OS and maps it again (a page fault and a zero
// fill on first touch of each page). Microbenchmarks reuse one warm buffer,
// so their curves leave this out; the heap model (heap_model.h) adds it
// where the replay's allocation sequence has to grow the heap.
// The last-level cache decides which of an op's inputs come from DRAM: the
// predictor tracks the bytes touched since each tensor's last use (its reuse
// distance) and reads the "@cold" curves, measured with the caches flushed,
// for the part that no longer fits. Between the two, an input touched more
// than the core's L2 ago comes from the LLC: the "@l3" curves, measured
// rotating over input sets larger than L2 but within the LLC, cost that part
// (a hot loop re-reads its inputs from L1/L2, a replayed op rarely does).
struct MemoryFacts {
  double page_bytes = 4096;
  double fault_us_per_page = 0;  // map, first write and unmap of one page
  double llc_bytes = 0;          // last-level cache; 0 = unknown, all warm
  double l2_bytes = 0;           // the core's L2; 0 = unknown, no "@l3" share
  std::string cache_source;      // where the two came from: "sysfs", "sysconf", "" unknown
  // The share of a tensor's lines no longer cached after `bytes` of other
  // traffic (SizePoint::us holds the share, 0..1), measured by rotating an
  // in-place kernel over ever more buffers (hw_bench_memory.cc). The cache a
  // replay keeps is not sysfs's size: other cores and other guests share
  // the LLC, and its replacement is not exact LRU. Empty: a step at
  // llc_bytes.
  std::vector<SizePoint> retention;
  // What handing written pages back to the OS costs, by the pages handed
  // back in one call (SizePoint::bytes holds the pages; madvise
  // MADV_DONTNEED, as glibc's trims and et_replay --heap match make it):
  // each page's TLB entry flushed apart up to the kernel's ceiling (33
  // pages), one flush beyond. A fresh page is a release's later cost: on a
  // 2-vCPU VM a flushed page cost 3 us at up to 33 pages, against 0.2 us a
  // page beyond. Optional; empty in older profiles (no release cost).
  std::vector<SizePoint> release;
  // A release and first touch inside a stream of other work, as et_replay
  // --heap match makes them (an op's output block handed back in part when
  // allocated, then faulted in as the op writes it): the time a release of
  // `pages` and a real kernel's write of them, followed by a few short
  // ops, took over the same write and ops on resident pages, right after
  // `after_us` of other work (GEMMs and elementwise ops). The hot-loop
  // curves above (release, fault_us_per_page) price the same pages at
  // their cheapest: on a 2-vCPU VM a one-page episode cost 29 us in such a
  // stream against 16 on the curves, a 32-page one alike on both.
  // Optional; empty in older profiles (no such cost).
  struct Episode {
    double after_us = 0, pages = 0, us = 0;
  };
  std::vector<Episode> episode;
};

// The time of one release of `pages` written pages (MemoryFacts::release:
// linear between measured counts, by the last two beyond the largest); 0
// without the curve or for no pages.
double releaseUs(const MemoryFacts& memory, double pages);

// A fresh page's first touch alone: fault_us_per_page less the share of it
// that unmapping the 64 MiB region it was measured on took (on the release
// curve), for a caller that charges the releases apart.
double touchUsPerPage(const MemoryFacts& memory);

// What an op that faults in `pages` fresh pages pays beyond releaseUs and
// touchUsPerPage for them, `after_us` after the previous such op
// (MemoryFacts::episode less the curves' price at each measured count,
// linear in pages between counts and level beyond them, then linear in
// log(after_us) between gaps, level beyond them; never negative). 0 without
// the table or for no pages.
double episodeExtraUs(const MemoryFacts& memory, double after_us, double pages);

struct HwProfile {
  HwIdentity identity;
  MemoryFacts memory;
  double dispatch_us = 0;  // one boxed call of a trivial op, as et_replay makes it
  double view_us = 0;      // one boxed call of a view op (no data touched)
  // CPU profiles: one boxed call of each op that runs no kernel (views,
  // allocations, a no-op to() or contiguous(), a scalar read), by op name
  // ("aten::t"). A replayed expand or permute took 1.7-1.8 us against a
  // view's 1.2, and an item 0.4. Ops not in it take view_us. Empty in
  // older profiles.
  std::map<std::string, double> call_us;
  // What et_replay spends per op beyond the call a kernel curve times (its
  // stack, clock stamps, releases, and a different kernel each call):
  // measured by replaying a chain of tiny ops (hw_bench_replay.cc).
  double replay_step_us = 0;
  // CPU profiles: what a replayed call costs beyond its curve and the step
  // when the op before it was of another kind: the median over the
  // profile's short ops of a call right after a round of sixteen other
  // kinds (a GEMM, reductions, softmax, a loss, a convolution, indexing,
  // ...) less its hot-loop call (timing.h, callColdUs). The replay-step
  // chain's six elementwise kinds share their code and left it out: small
  // models (MobileNet, a seq2seq, a GNN; 0.7-10 ms steps) missed 1-2 us on
  // every memory-bound op. 0 in older profiles. et_predict charges it only
  // where the profile has no cold_kinds curve: over twelve small models
  // recorded fresh on 2026-12-07 a call after 1-16 other kinds replayed
  // 0.0-0.2 us beyond its hot call, where this read 2.7.
  double call_cold_us = 0;
  // CPU profiles: call_cold_us for a view op (t, detach, alias): such a
  // call runs no kernel and no TensorIterator, and leaves little code to
  // lose. Over thirty small models' replays here a view cost 0.4 us beyond
  // its hot call and the step where call_cold_us charged 1.2-1.3 (and a
  // memory-bound op 1.6); the cold-call probe after its round of sixteen
  // kinds read 1.1 for views, 1.3 for the rest. So it is measured in a
  // replay: the replay-step chain with a view after each kernel, its
  // views' replayed cost over their hot calls less replay_step_us
  // (hw_bench_replay.cc). A view pays it after another kind, with no growth
  // beyond. -1 in older profiles: views pay call_cold_us.
  double call_cold_view_us = -1;
  // What an elementwise op pays to convert an input of another type than
  // the one it computes in (TensorIterator's .to() of a 0-dim double
  // scalar): a boxed mul_ of 64 floats by a 0-dim double less the same by
  // a 0-dim float, microseconds (OpModel::castInputsUs). A fixed call cost:
  // the slowdown leaves it unscaled. 0 in older profiles.
  double cast_input_us = 0;
  // GPU profiles: a replayed call's host time over its hot-loop launch
  // (launch_us), fitted with replay_step_us to replayed chains of kernels
  // and of views (hw_bench_replay.cc); 1 elsewhere.
  double launch_scale = 1;
  // GPU profiles: the same for a kind's first call in an iteration, measured
  // as a launch right after a round of sixteen other kinds of ops over its
  // hot-loop launch (the median over the profile's ops; timing.h,
  // launchFirstScale): its code and data are then out of the host's caches.
  // A replayed H200 step's first calls of each kind took 1.9-2.0x their
  // hot-loop launches, its later ones 1.3-1.4x. launch_scale when absent.
  double launch_first_scale = 1;
  // GPU profiles: from the host's return from a launch on an idle device to
  // its seeing the kernel done, beyond the kernel's device time (the median
  // over the profile's ops): what an op that reads a result on the host, and
  // the iteration's end, wait beyond the device's work. 0 elsewhere.
  double sync_latency_us = 0;
  // GPU profiles: the ops whose calls wait for the device themselves (the
  // CUDA embedding_bag backward reads a count back): their curves are the
  // synchronised call's host time, and et_predict runs them on the host
  // after the device's queue. Empty elsewhere.
  std::vector<std::string> synchronising_ops;

  // A GPU profile: its curves are device time and its launches are apart.
  bool gpu() const { return !launch_us.empty(); }
  // What the first op call after a stretch of other work costs beyond a
  // hot one, by the stretch's length (SizePoint::bytes holds the stretch in
  // microseconds, ::us the extra microseconds), measured after spins that
  // touch no memory: on a shared host the caches lose the dispatcher's code
  // and data with time while a long kernel runs (seen here: +5 us after
  // 0.5 ms, +50 us after 5 ms, whatever ran). Empty in older profiles.
  std::vector<SizePoint> cold_after;
  // CPU profiles: the per-call figures that are differences of a few
  // microseconds, each round's value by name: "dispatch_us", "view_us",
  // "replay_step_us", "call_cold_view_us" and "cold_after:<after_us>"
  // (that stretch's extra, before the curve is made non-decreasing).
  // et_profile_hw measures them at its start, after the compute curves and
  // at its end; each figure is the median of its rounds (clamped at zero).
  // One reading swung with the host: over 28 quick profiles on one 2-vCPU VM
  // (December 2026) replay_step_us read 0.00-0.50 us, dispatch_us 0.63-1.58
  // and cold_after at 3 ms 0.7-30 us. Empty in older profiles and GPU ones
  // (one reading each).
  std::map<std::string, std::vector<double>> rounds;
  // CPU profiles: what an op call costs beyond a hot one by how many other
  // kinds of ops ran since its kind last did (SizePoint::bytes holds that
  // count, ::us the extra microseconds): the median over a dozen probe ops
  // of a call right after a rotation through that many others of some fifty
  // kinds, less its hot-loop call (hw_bench_replay.cc). Each kind's kernel,
  // dispatch and TensorIterator code leave the core's caches as other kinds
  // run: a quick profile here measured +0.10 us after one other kind, +0.13
  // after 4, +0.54 after 16 and +1.08 after 48, and a boxed logsumexp on a
  // [2, 5, 16, 16] input paid +0.9, +3.4 and +4.8 us after 16, 55 and 110.
  // A small model's iteration runs 30-70 kinds, most once. The probes are
  // direct calls, and came out below call_cold_us (boxed calls, the
  // profile's own ops) at its 16 kinds: 0.14-0.54 against 1.0-1.55 us.
  // Until 2026-12-07 et_predict took the level from call_cold_us and only
  // the growth beyond 16 kinds from this curve; but the replays follow the
  // curve: over twelve small models recorded fresh (3,500 short calls) a
  // call after 1, 2-4, 5-16 and 17-48 other kinds replayed -0.03, 0.18, 0.20
  // and 1.81 us beyond its hot call (this curve 0.16, 0.31, 1.76, 2.91 at 1,
  // 4, 16, 48; call_cold_us 2.74), and their GMAE went 18.5% -> 5.6% on the
  // same replays. So an op whose kind last ran kinds_since kinds ago
  // (kindReuseDistance) pays the curve there; one right after its own kind
  // pays nothing. Empty in older profiles (call_cold_us after any other
  // kind).
  std::vector<SizePoint> cold_kinds;
  // The share of a timed loop's time that its median call leaves out (the
  // calls slowed by preemption, interrupts and reclaim), over every kernel
  // loop of the profile. Kernel curves are medians; a replayed iteration is
  // a sum of calls and pays the slow ones too, so the predictor divides its
  // op times by 1 - stall_share. 0 in profiles measured before it.
  double stall_share = 0;
  // The same by the loops' median call (timing.h, kStallBinsUs):
  // SizePoint::bytes holds the bin's upper end in microseconds (a loop whose
  // median is at most it and above the bin before), ::us the share. The
  // predictor divides an op's time by 1 - the share of its bin. Empty in
  // older profiles and GPU ones (stall_share for every op).
  std::vector<SizePoint> stall_by_call;
  // How the machine's speed held up while profiling (timing.h,
  // SpeedGuardScope): the reference probe's fastest time, the share of
  // measurements taken again because the machine slowed under them, the
  // share still slowed in every try, and the first tries' probes over the
  // fastest: their median (`slowdown`, the typical speed, which the
  // predictor applies to every CPU op as a replay's median iteration meets
  // it) and their mean. CPU profiles; all 0 (slowdowns 1) in older ones and
  // GPU ones. `kept_slowdown`: the median over measurements of the kept
  // try's mean probe over the fastest, which the guard divided out of that
  // try's samples (timing.h); 0 in profiles from before 2026-12-01, whose
  // curves kept it (and so counted a slowdown that lasted through every
  // try twice).
  struct SpeedGuardFacts {
    int measurements = 0;
    double probe_us = 0, retried_share = 0, kept_disturbed_share = 0, slowdown = 1, retry_s = 0,
           mean_slowdown = 1, kept_slowdown = 0;
  } speed_guard;
  // A GPU profile's host side: the median host microseconds one call of
  // each op it timed takes to launch (by op name, "aten::mm"; the two halves
  // of convolution_backward as "aten::convolution_backward:input" and
  // ":weight"). Its kernel curves are device time, and an op costs the
  // iteration the later of its launch and the device's finishing it
  // (predictor.cc). Empty in CPU profiles, whose curves hold both.
  std::map<std::string, double> launch_us;
  std::vector<GemmPoint> gemm;
  // The same grid with B transposed (a [m, k] times the view W.t() of a
  // [n, k] W): nn.Linear's forward. OpenBLAS packs such a B otherwise, and
  // at small m that costs more than the product (a 16 x 64 x 512 one took
  // 20 us against 8 with B contiguous); libtorch's own bfloat16 GEMM, on a
  // CPU without native bfloat16, 2.4-3.3x a contiguous B's time. Each type
  // of the grid (float32 alone before 2026-12-07; empty in older profiles:
  // such GEMMs then take the plain grid's rates).
  std::vector<GemmPoint> gemm_nt;
  // CPU profiles: what an op's call costs beyond the kernel its model
  // prices, by op: a GEMM op's beyond the mm of its product at the float32
  // [kGemmCallM, kGemmCallK] x [kGemmCallK, kGemmCallN]^T shape ("aten::addmm":
  // the bias broadcast into the output before the product; "aten::linear",
  // with a bias: the t() view and addmm's; "aten::linear:nobias", through
  // matmul), mean's beyond the sum it runs first, and the filling factories'
  // (zeros, ones, full, zeros_like, ones_like, new_zeros) beyond zero_ of as
  // many floats. Each the median of paired differences. A replayed linear
  // of [8, 16] by a [16, 16] weight with a bias took 5.5-6.5 us where its
  // product's curve gave 1.9, a mean of 36 floats 5.7 against the sum's 1.5.
  // et_predict adds the op's entry unscaled (a call's cost), and to a GEMM
  // with a bias its copy's growth with the output beyond the probe's on the
  // unary curve. Empty in older and GPU profiles.
  std::map<std::string, double> call_extra_us;
  static constexpr int64_t kGemmCallM = 8, kGemmCallK = 16, kGemmCallN = 16;
  std::vector<GemmPoint> bmm;
  std::vector<ConvPoint> conv;
  // Memory-bound curves by kernel class: "elementwise" (2 reads, 1 write),
  // "unary" (1 read, 1 write), "reduction" (1 read), "copy" (strided copy),
  // "rng:P" (bernoulli_(P) in place: random numbers, 1 write); "CLASS@cold"
  // the same kernels on inputs flushed from the caches. Each curve is in
  // increasing bytes once read or measured (curveUs relies on it).
  std::map<std::string, std::vector<SizePoint>> bandwidth;
  // CPU profiles: training batch norm's backward by the size of its
  // (sample, channel) planes, on 256 planes (SizePoint::bytes holds the
  // plane's elements, ::us the microseconds per plane), at every size up to
  // 32 elements and on two ladders beyond (sizes the vector width divides,
  // and one element more). ATen's kernel walks each plane in vectors of
  // `vector_floats` and a partial vector for what is left: a plane that the
  // width does not divide costs a fixed ~0.1 us more, whatever its length
  // (256 planes of 4 elements: 147 ns each; of 16: 51; of 2x2 maps in a
  // MobileNet, a [2, 576, 2, 2] backward took 131 us where its 18 KB on the
  // bytes curve said 7). Empty in older and GPU profiles: the bytes curve
  // alone.
  struct BatchNormPlanes {
    int vector_floats = 0;
    std::vector<SizePoint> per_plane;
  } batchnorm_backward_planes;
  // CPU profiles: training batch norm's forward (native_batch_norm) at
  // shapes [n, c, plane] from 16 to 1,024 channels and planes of 1 to 1,024
  // elements. ATen's kernel sums each channel over its samples' planes,
  // then scales plane by plane (a plane of one element: a loop vectorised
  // over the channels instead), and allocates and updates its statistics
  // through calls of its own: a call costs a fixed part, a part per
  // channel, one per plane (where planes have more than one element) and
  // one per element. The bytes curve, measured on planes of 256, left the
  // first three out: [2, 400, 2, 2] took 25 us in a hot loop where its
  // 13 KB on the curve said 10, and RegNetX's batch norms replayed at 2.1x
  // their predicted times. Empty in older and GPU profiles.
  struct BatchNormForwardPoint {
    double n = 0, c = 0, plane = 0, us = 0;
  };
  std::vector<BatchNormForwardPoint> batchnorm_forward;
  std::vector<EmbeddingPoint> embedding;
  std::vector<ForeachPoint> foreach_ops;
  std::vector<CollectivePoint> collectives;
};

// The share of a call of `us` microseconds (its median) that the calls
// slowed beyond the median add: its bin's in stall_by_call (the first bin
// whose upper end is at least `us`, else the last), stall_share without
// the bins.
double stallShareFor(const HwProfile& profile, double us);

// The bandwidth curve of bernoulli_ at probability p ("rng:0.9"); the
// predictor reads the nearest measured p.
std::string rngCurve(double p);

// Ops of the long tail that run a kernel of their own at a rate no class
// curve gives (losses, piecewise and exponential activations and their
// gradients, resampling, padding, scans): et_profile_hw times each on
// tensors of several sizes into its own curve, "op:NAME" over the bytes of
// its tensor arguments and its outputs, and et_predict reads that curve for
// the op by name (without "aten::"). A trace records none of their kernels
// as children: binary_cross_entropy's recorded children are its result's
// mean and a copy, upsample_bilinear2d's its allocations.
const std::set<std::string>& longTailOps();

// 2-D pooling (et_profile_hw measures, the op model interpolates): each
// output element of a window runs a loop over the window, so time goes with
// the outputs and the window's size, not with the bytes. "pool:OP:K" holds
// OP ("max_pool2d", "avg_pool2d", "avg_pool2d_backward") with KxK windows,
// stride 2, over 4 bytes per output element; "pool:max_pool2d_backward"
// over 4 bytes per input and output element (a zero fill and a scatter,
// whatever the window). K is kPoolWindows' 2 and 3; other windows are a
// line through the two per output element.
inline constexpr int64_t kPoolWindows[] = {2, 3};
std::string poolCurve(const std::string& op, int64_t window);

// Reductions by shape (et_profile_hw measures, the op model interpolates):
// "reduction:outer:W", a sum over the leading dim of [n / W, W] (W outputs,
// each gathering a strided column), and "reduction:rows:R", a sum over the
// last dim of [n / R, R] (one output per row of R). Profiles without them
// read the full reduction's "reduction" curve.
inline constexpr int64_t kOuterWidths[] = {16, 128, 1024, 8192};
inline constexpr int64_t kRowLengths[] = {8, 64, 512, 4096};
// The row reductions' lengths: kRowLengths and rows shorter than a vector
// (2 and 4: a global average pool over 2 x 2 maps, the tails of
// MobileNet-like networks), which run a scalar loop per row: 2,560 rows of
// 4 summed in 20.9 us on a 2-vCPU EPYC where the rows-of-8 curve read 9.
inline constexpr int64_t kReduceRowLengths[] = {2, 4, 8, 64, 512, 4096};
std::string reductionCurve(const std::string& kind, int64_t width);

// The softmaxes by row length: "op:NAME:rows:R" holds op:NAME's kernel
// (NAME one of kRowsOps) over the last dim of [n / R, R], R from
// kRowLengths and kTailRowLengths; "op:NAME" itself is rows of 256. Each
// row costs passes of its own (its max, its sum, the scaling), and a row
// that does not fill whole vectors of 8 floats ends in a slower tail: on a
// 2-vCPU EPYC, _softmax over 9,248 floats took 11.1 us in rows of 16, 49.5
// in rows of 17, 8.9 in rows of 32, 27.0 in rows of 34 (zoo_vit's attention,
// [8, 4, 17, 17], replayed at 5.7x the rows-of-256 curve).
inline constexpr const char* kRowsOps[] = {"_softmax", "_log_softmax", "_softmax_backward_data",
                                           "_log_softmax_backward_data"};
inline constexpr int64_t kTailRowLengths[] = {9, 65, 513};
inline constexpr int64_t kRowVectorFloats = 8;
std::string rowsCurve(const std::string& op_curve, int64_t row);

// index_add_ by the elements each index adds (its slice: the source's
// numel over its size in dim): "op:index_add:rows:R" adds source rows of R
// floats (R from kIndexAddRows; 1 is a 1-D self) into a table an eighth of
// their number, over the source's bytes. On a 2-vCPU EPYC a 2-D index_add_
// costs ~54 ns an index whatever its row (1,000 rows of 16 floats: 54 us;
// of 256: 74), a 1-D one 1.3 ns (a GNN's message sums replayed at 25x the
// in-place add's curve).
inline constexpr int64_t kIndexAddRows[] = {1, 16, 256};

// Sorts every size curve by bytes (profiles written by hand or by older
// tools may not be); readProfile / profileFromJson call it.
void sortCurves(HwProfile& profile);

// JSON text of a profile (stable key order) and back. fromJson throws
// InputError naming `path` when a field is missing or of the wrong kind.
std::string profileToJson(const HwProfile& profile);
HwProfile profileFromJson(const std::string& text, const std::string& path);
HwProfile readProfile(const std::string& path);

// Refuses (InputError naming the profile and the field) a profile taken with
// another libtorch version or another device kind than `device`.
void checkProfileMatches(const HwProfile& profile, const std::string& path,
                         const std::string& torch_version, const std::string& device);

}  // namespace etb::predict
