// SPDX-License-Identifier: MIT
#include "predictor/hw_profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/base/error.h"

namespace etb::predict {
namespace {
using nlohmann::json;

// 2: the "memory" block (first-touch cost, LLC), the "rng" and "@cold"
// curves, cold embedding lookups, conv backward halves measured apart.
// 3: each collective point names its backend (MPI and gloo curves); the
// replayer's own cost per op (replay_step_us).
constexpr int kSchemaVersion = 3;

// Reads `key` of `obj` as T, or throws InputError naming the path and key.
template <typename T>
T field(const json& obj, const char* key, const std::string& path, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    ETB_INPUT_ERROR(SourceLoc{path}, where, ": missing \"", key, "\"");
  }
  try {
    return it->get<T>();
  } catch (const json::exception& e) {
    ETB_INPUT_ERROR(SourceLoc{path}, where, ".", key, ": ", e.what());
  }
}

// An optional top-level number of a profile into `out` (left as it is when
// absent), refused naming the path when below `least`.
void optionalAtLeast(const json& j, const char* key, const std::string& path, double least, double* out) {
  if (!j.contains(key)) return;
  *out = field<double>(j, key, path, "profile");
  if (*out >= least) return;
  if (least == 0) ETB_INPUT_ERROR(SourceLoc{path}, key, " ", *out, " is negative");
  ETB_INPUT_ERROR(SourceLoc{path}, key, " ", *out, " is below ", least);
}

const json& member(const json& obj, const char* key, const std::string& path) {
  const auto it = obj.find(key);
  if (it == obj.end()) ETB_INPUT_ERROR(SourceLoc{path}, "missing \"", key, "\"");
  return *it;
}

json identityJson(const HwIdentity& id) {
  json j = {{"host", id.host},
            {"cpu_model", id.cpu_model},
            {"cores", id.cores},
            {"device", id.device},
            {"threads", id.threads},
            {"torch_version", id.torch_version},
            {"mpi_version", id.mpi_version},
            {"etbench_version", id.etbench_version},
            {"created", id.created},
            {"quick", id.quick}};
  if (id.load_avg >= 0) j["load_avg"] = id.load_avg;
  if (!id.device_model.empty()) j["device_model"] = id.device_model;
  if (!id.sections_s.empty()) {
    json parts = json::array();
    for (const auto& [name, s] : id.sections_s) parts.push_back({{"section", name}, {"s", s}});
    j["sections_s"] = parts;
  }
  return j;
}

HwIdentity identityFrom(const json& j, const std::string& p) {
  HwIdentity id;
  const std::string w = "identity";
  id.host = field<std::string>(j, "host", p, w);
  id.cpu_model = field<std::string>(j, "cpu_model", p, w);
  id.cores = field<int>(j, "cores", p, w);
  id.device = field<std::string>(j, "device", p, w);
  id.threads = field<int>(j, "threads", p, w);
  id.torch_version = field<std::string>(j, "torch_version", p, w);
  id.mpi_version = field<std::string>(j, "mpi_version", p, w);
  id.etbench_version = field<std::string>(j, "etbench_version", p, w);
  id.created = field<std::string>(j, "created", p, w);
  id.quick = field<bool>(j, "quick", p, w);
  // Optional: profiles before it did not record the load.
  if (j.contains("load_avg")) id.load_avg = field<double>(j, "load_avg", p, w);
  if (j.contains("device_model")) id.device_model = field<std::string>(j, "device_model", p, w);
  if (j.contains("sections_s")) {
    if (!j.at("sections_s").is_array()) ETB_INPUT_ERROR(SourceLoc{p}, "identity.sections_s: not an array");
    for (const json& part : j.at("sections_s")) {
      const double s = field<double>(part, "s", p, "identity.sections_s");
      if (s < 0) ETB_INPUT_ERROR(SourceLoc{p}, "identity.sections_s: negative time ", s);
      id.sections_s.emplace_back(field<std::string>(part, "section", p, "identity.sections_s"), s);
    }
  }
  return id;
}

json gemmJson(const std::vector<GemmPoint>& pts) {
  json a = json::array();
  for (const GemmPoint& g : pts) {
    a.push_back({{"b", g.b}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"us", g.us}, {"dtype", g.dtype}});
  }
  return a;
}

std::vector<GemmPoint> gemmFrom(const json& a, const std::string& p, const std::string& w) {
  std::vector<GemmPoint> out;
  for (const json& j : a) {
    out.push_back({field<int64_t>(j, "b", p, w), field<int64_t>(j, "m", p, w),
                   field<int64_t>(j, "n", p, w), field<int64_t>(j, "k", p, w),
                   field<double>(j, "us", p, w),
                   j.contains("dtype") ? field<std::string>(j, "dtype", p, w) : "float32"});
  }
  return out;
}

json convJson(const std::vector<ConvPoint>& pts) {
  json a = json::array();
  for (const ConvPoint& c : pts) {
    a.push_back({{"n", c.n}, {"c", c.c}, {"h", c.h}, {"w", c.w}, {"oc", c.oc}, {"kh", c.kh},
                 {"kw", c.kw}, {"stride", c.stride}, {"groups", c.groups},
                 {"fwd_us", c.fwd_us}, {"bwd_input_us", c.bwd_input_us},
                 {"bwd_weight_us", c.bwd_weight_us}, {"dtype", c.dtype}});
    if (c.transposed) a.back()["transposed"] = true;
    if (c.hasChannelsLast()) {
      a.back()["fwd_cl_us"] = c.fwd_cl_us;
      a.back()["bwd_input_cl_us"] = c.bwd_input_cl_us;
      a.back()["bwd_weight_cl_us"] = c.bwd_weight_cl_us;
    }
  }
  return a;
}

std::vector<ConvPoint> convFrom(const json& a, const std::string& p) {
  std::vector<ConvPoint> out;
  const std::string w = "conv";
  for (const json& j : a) {
    ConvPoint c;
    c.n = field<int64_t>(j, "n", p, w);
    c.c = field<int64_t>(j, "c", p, w);
    c.h = field<int64_t>(j, "h", p, w);
    c.w = field<int64_t>(j, "w", p, w);
    c.oc = field<int64_t>(j, "oc", p, w);
    c.kh = field<int64_t>(j, "kh", p, w);
    c.kw = field<int64_t>(j, "kw", p, w);
    c.stride = field<int64_t>(j, "stride", p, w);
    c.groups = field<int64_t>(j, "groups", p, w);
    c.fwd_us = field<double>(j, "fwd_us", p, w);
    c.bwd_input_us = field<double>(j, "bwd_input_us", p, w);
    c.bwd_weight_us = field<double>(j, "bwd_weight_us", p, w);
    if (j.contains("fwd_cl_us")) {
      c.fwd_cl_us = field<double>(j, "fwd_cl_us", p, w);
      c.bwd_input_cl_us = field<double>(j, "bwd_input_cl_us", p, w);
      c.bwd_weight_cl_us = field<double>(j, "bwd_weight_cl_us", p, w);
    }
    if (j.contains("dtype")) c.dtype = field<std::string>(j, "dtype", p, w);
    if (j.contains("transposed")) c.transposed = field<bool>(j, "transposed", p, w);
    out.push_back(c);
  }
  return out;
}

json embeddingJson(const std::vector<EmbeddingPoint>& pts) {
  json a = json::array();
  for (const EmbeddingPoint& e : pts) {
    a.push_back({{"rows", e.rows}, {"dim", e.dim}, {"batch", e.batch}, {"pooling", e.pooling},
                 {"dist", e.dist}, {"fwd_us", e.fwd_us}, {"bwd_us", e.bwd_us},
                 {"fwd_cold_us", e.fwd_cold_us}});
    if (e.fwd_rows_cold_us > 0) a.back()["fwd_rows_cold_us"] = e.fwd_rows_cold_us;
    if (e.bwd_cold_us > 0) a.back()["bwd_cold_us"] = e.bwd_cold_us;
    if (e.fill_us > 0) a.back()["fill_us"] = e.fill_us;
  }
  return a;
}

std::vector<EmbeddingPoint> embeddingFrom(const json& a, const std::string& p) {
  std::vector<EmbeddingPoint> out;
  const std::string w = "embedding_bag";
  for (const json& j : a) {
    EmbeddingPoint e;
    e.rows = field<int64_t>(j, "rows", p, w);
    e.dim = field<int64_t>(j, "dim", p, w);
    e.batch = field<int64_t>(j, "batch", p, w);
    e.pooling = field<int64_t>(j, "pooling", p, w);
    e.dist = field<std::string>(j, "dist", p, w);
    e.fwd_us = field<double>(j, "fwd_us", p, w);
    e.bwd_us = field<double>(j, "bwd_us", p, w);
    e.fwd_cold_us = field<double>(j, "fwd_cold_us", p, w);
    if (j.contains("fwd_rows_cold_us")) e.fwd_rows_cold_us = field<double>(j, "fwd_rows_cold_us", p, w);
    // Optional: profiles before it took the backward warm only.
    if (j.contains("bwd_cold_us")) e.bwd_cold_us = field<double>(j, "bwd_cold_us", p, w);
    if (j.contains("fill_us")) e.fill_us = field<double>(j, "fill_us", p, w);
    out.push_back(e);
  }
  return out;
}
MemoryFacts memoryFrom(const json& mem, const std::string& path) {
  MemoryFacts m;
  m.page_bytes = field<double>(mem, "page_bytes", path, "memory");
  m.fault_us_per_page = field<double>(mem, "fault_us_per_page", path, "memory");
  m.llc_bytes = field<double>(mem, "llc_bytes", path, "memory");
  // Optional: profiles measured before it read every input as L2-warm.
  if (mem.contains("l2_bytes")) m.l2_bytes = field<double>(mem, "l2_bytes", path, "memory");
  if (mem.contains("cache_source")) m.cache_source = field<std::string>(mem, "cache_source", path, "memory");
  if (mem.contains("retention")) {
    for (const json& r : member(mem, "retention", path)) {
      const double d = field<double>(r, "distance_bytes", path, "memory.retention");
      const double share = field<double>(r, "evicted_share", path, "memory.retention");
      if (d < 0 || share < 0 || share > 1) {
        ETB_INPUT_ERROR(SourceLoc{path}, "memory.retention: distance_bytes must not be negative "
                        "and evicted_share within 0..1 (got ", d, ", ", share, ")");
      }
      m.retention.push_back({d, share});
    }
  }
  if (mem.contains("release")) {
    for (const json& r : member(mem, "release", path)) {
      const double pages = field<double>(r, "pages", path, "memory.release");
      const double us = field<double>(r, "us", path, "memory.release");
      if (pages < 1 || us < 0) {
        ETB_INPUT_ERROR(SourceLoc{path}, "memory.release: pages must be at least 1 and us not "
                        "negative (got ", pages, ", ", us, ")");
      }
      m.release.push_back({pages, us});
    }
  }
  if (mem.contains("episode")) {
    for (const json& e : member(mem, "episode", path)) {
      MemoryFacts::Episode x;
      x.after_us = field<double>(e, "after_us", path, "memory.episode");
      x.pages = field<double>(e, "pages", path, "memory.episode");
      x.us = field<double>(e, "us", path, "memory.episode");
      if (x.after_us < 0 || x.pages < 1) {
        ETB_INPUT_ERROR(SourceLoc{path}, "memory.episode: after_us must not be negative and "
                        "pages must be at least 1 (got ", x.after_us, ", ", x.pages, ")");
      }
      m.episode.push_back(x);
    }
    std::sort(m.episode.begin(), m.episode.end(), [](const auto& a, const auto& b) {
      return a.after_us != b.after_us ? a.after_us < b.after_us : a.pages < b.pages;
    });
    for (size_t i = 1; i < m.episode.size(); ++i) {
      if (m.episode[i].after_us == m.episode[i - 1].after_us &&
          m.episode[i].pages == m.episode[i - 1].pages) {
        ETB_INPUT_ERROR(SourceLoc{path}, "memory.episode: two points for ", m.episode[i].pages,
                        " pages after ", m.episode[i].after_us, " us");
      }
    }
  }
  if (m.page_bytes <= 0 || m.fault_us_per_page < 0) {
    ETB_INPUT_ERROR(SourceLoc{path}, "memory: page_bytes must be positive and fault_us_per_page "
                    "not negative");
  }
  return m;
}
}  // namespace

double releaseUs(const MemoryFacts& m, double pages) {
  const std::vector<SizePoint>& r = m.release;
  if (r.empty() || pages <= 0) return 0;
  if (r.size() == 1) return r.front().us * pages / r.front().bytes;
  // Linear in pages: the per-page flushes up to the ceiling, then a step
  // down to one flush (log-log between counts would blur the step).
  auto hi = std::lower_bound(r.begin(), r.end(), pages,
                             [](const SizePoint& p, double x) { return p.bytes < x; });
  if (hi == r.begin()) return r.front().us * pages / r.front().bytes;
  if (hi == r.end()) hi = r.end() - 1;
  const auto lo = hi - 1;
  const double slope = (hi->us - lo->us) / (hi->bytes - lo->bytes);
  return std::max(0.0, lo->us + slope * (pages - lo->bytes));
}

double touchUsPerPage(const MemoryFacts& m) {
  if (m.release.empty() || m.page_bytes <= 0) return m.fault_us_per_page;
  const double pages = 64.0 * (1 << 20) / m.page_bytes;  // firstTouchUsPerPage's region
  return std::max(0.0, m.fault_us_per_page - releaseUs(m, pages) / pages);
}

namespace {
using EpisodeIt = std::vector<MemoryFacts::Episode>::const_iterator;

// episodeExtraUs at one measured gap: its points [first, last) (sorted by
// pages) less the curves' price.
double episodeExtraAt(const MemoryFacts& m, EpisodeIt first, EpisodeIt last, double pages) {
  const double touch = touchUsPerPage(m);
  const auto extra = [&](const MemoryFacts::Episode& e) {
    return e.us - releaseUs(m, e.pages) - e.pages * touch;
  };
  double us = extra(*(last - 1));
  if (pages <= first->pages) {
    us = extra(*first);
  } else {
    for (EpisodeIt hi = first + 1; hi != last; ++hi) {
      if (pages > hi->pages) continue;
      const EpisodeIt lo = hi - 1;
      const double f = (pages - lo->pages) / (hi->pages - lo->pages);
      us = extra(*lo) + f * (extra(*hi) - extra(*lo));
      break;
    }
  }
  return std::max(0.0, us);
}

// The end of the gap `first` starts (MemoryFacts::episode is sorted by gap).
EpisodeIt gapEnd(const MemoryFacts& m, EpisodeIt first) {
  return std::find_if(first, m.episode.end(),
                      [&](const MemoryFacts::Episode& e) { return e.after_us != first->after_us; });
}
}  // namespace

double stallShareFor(const HwProfile& hw, double us) {
  if (hw.stall_by_call.empty()) return hw.stall_share;
  for (const SizePoint& b : hw.stall_by_call) {
    if (us <= b.bytes) return b.us;
  }
  return hw.stall_by_call.back().us;
}

double episodeExtraUs(const MemoryFacts& m, double after_us, double pages) {
  if (m.episode.empty() || pages <= 0) return 0;
  EpisodeIt lo = m.episode.begin();
  EpisodeIt lo_end = gapEnd(m, lo);
  if (after_us <= lo->after_us) return episodeExtraAt(m, lo, lo_end, pages);
  while (lo_end != m.episode.end()) {
    const EpisodeIt hi = lo_end, hi_end = gapEnd(m, hi);
    if (after_us <= hi->after_us) {
      const double f = lo->after_us > 0
                           ? std::log(after_us / lo->after_us) / std::log(hi->after_us / lo->after_us)
                           : after_us / hi->after_us;
      const double a = episodeExtraAt(m, lo, lo_end, pages), b = episodeExtraAt(m, hi, hi_end, pages);
      return a + f * (b - a);
    }
    lo = hi;
    lo_end = hi_end;
  }
  return episodeExtraAt(m, lo, lo_end, pages);
}

double HwIdentity::tookSeconds() const {
  double total = 0;
  for (const auto& part : sections_s) total += part.second;
  return total;
}

double otherLoad(const HwIdentity& id) {
  if (id.load_avg < 0) return 0;
  return std::max(0.0, id.load_avg - std::min(id.threads, std::max(id.cores, 1)));
}

bool measuredBesideOtherWork(const HwIdentity& id) {
  const int free_cores = std::max(id.cores - id.threads, 1);
  return otherLoad(id) > 0.5 * free_cores;
}

std::string profileToJson(const HwProfile& hw) {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["identity"] = identityJson(hw.identity);
  j["memory"] = {{"page_bytes", hw.memory.page_bytes},
                 {"fault_us_per_page", hw.memory.fault_us_per_page},
                 {"llc_bytes", hw.memory.llc_bytes},
                 {"l2_bytes", hw.memory.l2_bytes}};
  if (!hw.memory.cache_source.empty()) j["memory"]["cache_source"] = hw.memory.cache_source;
  json ret = json::array();
  for (const SizePoint& r : hw.memory.retention) {
    ret.push_back({{"distance_bytes", r.bytes}, {"evicted_share", r.us}});
  }
  j["memory"]["retention"] = ret;
  json rel = json::array();
  for (const SizePoint& r : hw.memory.release) rel.push_back({{"pages", r.bytes}, {"us", r.us}});
  j["memory"]["release"] = rel;
  json ep = json::array();
  for (const MemoryFacts::Episode& e : hw.memory.episode) {
    ep.push_back({{"after_us", e.after_us}, {"pages", e.pages}, {"us", e.us}});
  }
  j["memory"]["episode"] = ep;
  j["dispatch_us"] = hw.dispatch_us;
  j["view_us"] = hw.view_us;
  j["replay_step_us"] = hw.replay_step_us;
  j["call_cold_us"] = hw.call_cold_us;
  if (hw.call_cold_view_us >= 0) j["call_cold_view_us"] = hw.call_cold_view_us;
  if (hw.cast_input_us > 0) j["cast_input_us"] = hw.cast_input_us;
  json cold = json::array();
  for (const SizePoint& c : hw.cold_after) cold.push_back({{"after_us", c.bytes}, {"extra_us", c.us}});
  j["cold_after"] = cold;
  if (!hw.rounds.empty()) j["rounds"] = hw.rounds;
  if (!hw.cold_kinds.empty()) {
    json kinds = json::array();
    for (const SizePoint& c : hw.cold_kinds) kinds.push_back({{"kinds", c.bytes}, {"extra_us", c.us}});
    j["cold_kinds"] = kinds;
  }
  j["stall_share"] = hw.stall_share;
  if (!hw.stall_by_call.empty()) {
    json bins = json::array();
    for (const SizePoint& b : hw.stall_by_call) bins.push_back({{"up_to_us", b.bytes}, {"share", b.us}});
    j["stall_by_call"] = bins;
  }
  if (hw.speed_guard.measurements > 0) {
    j["speed_guard"] = {{"measurements", hw.speed_guard.measurements},
                        {"probe_us", hw.speed_guard.probe_us},
                        {"retried_share", hw.speed_guard.retried_share},
                        {"kept_disturbed_share", hw.speed_guard.kept_disturbed_share},
                        {"slowdown", hw.speed_guard.slowdown},
                        {"retry_s", hw.speed_guard.retry_s},
                        {"mean_slowdown", hw.speed_guard.mean_slowdown}};
    if (hw.speed_guard.kept_slowdown > 0) j["speed_guard"]["kept_slowdown"] = hw.speed_guard.kept_slowdown;
  }
  if (hw.gpu()) {
    j["launch_us"] = hw.launch_us;
    j["launch_scale"] = hw.launch_scale;
    j["launch_first_scale"] = hw.launch_first_scale;
    j["sync_latency_us"] = hw.sync_latency_us;
    j["synchronising_ops"] = hw.synchronising_ops;
  }
  if (!hw.batchnorm_backward_planes.per_plane.empty()) {
    json pts = json::array();
    for (const SizePoint& q : hw.batchnorm_backward_planes.per_plane) {
      pts.push_back({{"plane", q.bytes}, {"us_per_plane", q.us}});
    }
    j["batchnorm_backward_planes"] = {{"vector_floats", hw.batchnorm_backward_planes.vector_floats},
                                      {"points", pts}};
  }
  if (!hw.batchnorm_forward.empty()) {
    json pts = json::array();
    for (const auto& q : hw.batchnorm_forward) {
      pts.push_back({{"n", q.n}, {"c", q.c}, {"plane", q.plane}, {"us", q.us}});
    }
    j["batchnorm_forward"] = pts;
  }
  j["gemm"] = gemmJson(hw.gemm);
  if (!hw.gemm_nt.empty()) j["gemm_nt"] = gemmJson(hw.gemm_nt);
  if (!hw.call_extra_us.empty()) j["call_extra_us"] = hw.call_extra_us;
  if (!hw.call_us.empty()) j["call_us"] = hw.call_us;
  j["bmm"] = gemmJson(hw.bmm);
  j["conv"] = convJson(hw.conv);
  json bw = json::object();
  for (const auto& [kind, pts] : hw.bandwidth) {
    json a = json::array();
    for (const SizePoint& s : pts) a.push_back({{"bytes", s.bytes}, {"us", s.us}});
    bw[kind] = a;
  }
  j["bandwidth"] = bw;
  j["embedding_bag"] = embeddingJson(hw.embedding);
  json fe = json::array();
  for (const ForeachPoint& f : hw.foreach_ops) {
    fe.push_back({{"tensors", f.tensors}, {"elems", f.elems}, {"us", f.us}, {"op", f.op},
                  {"bytes", f.bytes}});
  }
  j["foreach"] = fe;
  json co = json::array();
  for (const CollectivePoint& c : hw.collectives) {
    co.push_back({{"type", c.type}, {"group_size", c.group_size}, {"bytes", c.bytes}, {"us", c.us},
                  {"backend", c.backend}});
  }
  j["collectives"] = co;
  return j.dump(1) + "\n";
}

HwProfile profileFromJson(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    ETB_INPUT_ERROR(SourceLoc{path}, "not a hardware profile (invalid JSON): ", e.what());
  }
  if (!j.is_object()) ETB_INPUT_ERROR(SourceLoc{path}, "not a hardware profile (no JSON object)");
  const int version = field<int>(j, "schema_version", path, "profile");
  if (version != kSchemaVersion) {
    ETB_INPUT_ERROR(SourceLoc{path}, "schema_version ", version, ": this et_predict reads version ",
                    kSchemaVersion, " profiles; re-run et_profile_hw");
  }
  HwProfile hw;
  hw.identity = identityFrom(member(j, "identity", path), path);
  hw.memory = memoryFrom(member(j, "memory", path), path);
  hw.dispatch_us = field<double>(j, "dispatch_us", path, "profile");
  hw.view_us = field<double>(j, "view_us", path, "profile");
  hw.replay_step_us = field<double>(j, "replay_step_us", path, "profile");
  optionalAtLeast(j, "call_cold_us", path, 0, &hw.call_cold_us);
  optionalAtLeast(j, "cast_input_us", path, 0, &hw.cast_input_us);
  optionalAtLeast(j, "call_cold_view_us", path, 0, &hw.call_cold_view_us);
  optionalAtLeast(j, "launch_scale", path, 1, &hw.launch_scale);
  hw.launch_first_scale = hw.launch_scale;
  optionalAtLeast(j, "launch_first_scale", path, 1, &hw.launch_first_scale);
  if (j.contains("sync_latency_us")) hw.sync_latency_us = field<double>(j, "sync_latency_us", path, "profile");
  if (j.contains("synchronising_ops")) {
    const json& ops = j["synchronising_ops"];
    if (!ops.is_array()) ETB_INPUT_ERROR(SourceLoc{path}, "synchronising_ops: not an array of op names");
    for (const json& op : ops) {
      if (!op.is_string()) ETB_INPUT_ERROR(SourceLoc{path}, "synchronising_ops: ", op.dump(), " is not an op name");
      hw.synchronising_ops.push_back(op.get<std::string>());
    }
  }
  if (j.contains("cold_after")) {
    for (const json& c : j["cold_after"]) {
      hw.cold_after.push_back({field<double>(c, "after_us", path, "cold_after"),
                               field<double>(c, "extra_us", path, "cold_after")});
    }
  }
  if (j.contains("rounds")) {
    const json& r = j["rounds"];
    if (!r.is_object()) {
      ETB_INPUT_ERROR(SourceLoc{path}, "rounds: not an object of figure -> its rounds' values");
    }
    for (const auto& [name, values] : r.items()) {
      if (!values.is_array()) ETB_INPUT_ERROR(SourceLoc{path}, "rounds.", name, ": not an array of numbers");
      for (const json& v : values) {
        if (!v.is_number() || !std::isfinite(v.get<double>())) {
          ETB_INPUT_ERROR(SourceLoc{path}, "rounds.", name, ": ", v.dump(), " is not a finite number");
        }
        hw.rounds[name].push_back(v.get<double>());
      }
    }
  }
  if (j.contains("cold_kinds")) {
    if (!j["cold_kinds"].is_array()) ETB_INPUT_ERROR(SourceLoc{path}, "cold_kinds: not an array of points");
    for (const json& c : j["cold_kinds"]) {
      const double kinds = field<double>(c, "kinds", path, "cold_kinds");
      const double extra = field<double>(c, "extra_us", path, "cold_kinds");
      if (!(kinds >= 1) || !(extra >= 0) || !std::isfinite(kinds) || !std::isfinite(extra)) {
        ETB_INPUT_ERROR(SourceLoc{path}, "cold_kinds: a point of ", kinds, " kinds and ", extra,
                        " us (want at least one kind and a finite, non-negative extra)");
      }
      hw.cold_kinds.push_back({kinds, extra});
    }
  }
  if (j.contains("stall_by_call")) {
    if (!j["stall_by_call"].is_array()) {
      ETB_INPUT_ERROR(SourceLoc{path}, "stall_by_call: not an array of bins");
    }
    for (const json& b : j["stall_by_call"]) {
      const double up_to = field<double>(b, "up_to_us", path, "stall_by_call");
      const double share = field<double>(b, "share", path, "stall_by_call");
      if (!(up_to > 0) || !(share >= 0 && share < 1)) {
        ETB_INPUT_ERROR(SourceLoc{path}, "stall_by_call: a bin up to ", up_to, " us with share ", share,
                        " (want a positive bound and a share within [0, 1))");
      }
      hw.stall_by_call.push_back({up_to, share});
    }
    std::sort(hw.stall_by_call.begin(), hw.stall_by_call.end(),
              [](const SizePoint& a, const SizePoint& b) { return a.bytes < b.bytes; });
  }
  if (j.contains("stall_share")) {
    hw.stall_share = field<double>(j, "stall_share", path, "profile");
    if (hw.stall_share < 0 || hw.stall_share >= 1) {
      ETB_INPUT_ERROR(SourceLoc{path}, "stall_share ", hw.stall_share, " is not within [0, 1)");
    }
  }
  if (j.contains("speed_guard")) {
    const json& g = j["speed_guard"];
    hw.speed_guard.measurements = field<int>(g, "measurements", path, "speed_guard");
    hw.speed_guard.probe_us = field<double>(g, "probe_us", path, "speed_guard");
    hw.speed_guard.retried_share = field<double>(g, "retried_share", path, "speed_guard");
    hw.speed_guard.kept_disturbed_share = field<double>(g, "kept_disturbed_share", path, "speed_guard");
    hw.speed_guard.slowdown = field<double>(g, "slowdown", path, "speed_guard");
    hw.speed_guard.retry_s = field<double>(g, "retry_s", path, "speed_guard");
    hw.speed_guard.mean_slowdown = field<double>(g, "mean_slowdown", path, "speed_guard");
    if (g.contains("kept_slowdown")) {
      hw.speed_guard.kept_slowdown = field<double>(g, "kept_slowdown", path, "speed_guard");
      if (hw.speed_guard.kept_slowdown < 1) {
        ETB_INPUT_ERROR(SourceLoc{path}, "speed_guard.kept_slowdown ", hw.speed_guard.kept_slowdown,
                        " is below 1");
      }
    }
    if (hw.speed_guard.slowdown < 1) {
      ETB_INPUT_ERROR(SourceLoc{path}, "speed_guard.slowdown ", hw.speed_guard.slowdown, " is below 1");
    }
  }
  for (const auto& [key, table] : {std::pair{"launch_us", &hw.launch_us}, std::pair{"call_extra_us", &hw.call_extra_us},
                             std::pair{"call_us", &hw.call_us}}) {
    if (!j.contains(key)) continue;
    const json& l = j[key];
    if (!l.is_object()) ETB_INPUT_ERROR(SourceLoc{path}, key, ": not an object of op name -> us");
    for (const auto& [name, us] : l.items()) {
      if (!us.is_number() || us.get<double>() < 0) {
        ETB_INPUT_ERROR(SourceLoc{path}, key, ".", name, ": not a non-negative number");
      }
      (*table)[name] = us.get<double>();
    }
  }
  if (j.contains("batchnorm_backward_planes")) {
    const json& b = j["batchnorm_backward_planes"];
    auto& planes = hw.batchnorm_backward_planes;
    planes.vector_floats = field<int>(b, "vector_floats", path, "batchnorm_backward_planes");
    if (planes.vector_floats < 1) {
      ETB_INPUT_ERROR(SourceLoc{path}, "batchnorm_backward_planes.vector_floats ", planes.vector_floats,
                      " is below 1");
    }
    for (const json& q : member(b, "points", path)) {
      const SizePoint pt{field<double>(q, "plane", path, "batchnorm_backward_planes"),
                         field<double>(q, "us_per_plane", path, "batchnorm_backward_planes")};
      if (pt.bytes < 1 || pt.us <= 0) {
        ETB_INPUT_ERROR(SourceLoc{path}, "batchnorm_backward_planes: plane ", pt.bytes, " at ", pt.us,
                        " us per plane (planes of at least 1 element, times above 0)");
      }
      planes.per_plane.push_back(pt);
    }
  }
  if (j.contains("batchnorm_forward")) {
    if (!j["batchnorm_forward"].is_array()) {
      ETB_INPUT_ERROR(SourceLoc{path}, "batchnorm_forward is not an array of measured shapes");
    }
    for (const json& q : j["batchnorm_forward"]) {
      const HwProfile::BatchNormForwardPoint pt{field<double>(q, "n", path, "batchnorm_forward"),
                                                field<double>(q, "c", path, "batchnorm_forward"),
                                                field<double>(q, "plane", path, "batchnorm_forward"),
                                                field<double>(q, "us", path, "batchnorm_forward")};
      if (pt.n < 1 || pt.c < 1 || pt.plane < 1 || pt.us <= 0) {
        ETB_INPUT_ERROR(SourceLoc{path}, "batchnorm_forward: [", pt.n, ", ", pt.c, ", ", pt.plane, "] at ", pt.us,
                        " us (sizes of at least 1, times above 0)");
      }
      hw.batchnorm_forward.push_back(pt);
    }
  }
  hw.gemm = gemmFrom(member(j, "gemm", path), path, "gemm");
  if (j.contains("gemm_nt")) hw.gemm_nt = gemmFrom(j["gemm_nt"], path, "gemm_nt");
  hw.bmm = gemmFrom(member(j, "bmm", path), path, "bmm");
  hw.conv = convFrom(member(j, "conv", path), path);
  for (const auto& [kind, a] : member(j, "bandwidth", path).items()) {
    for (const json& s : a) {
      hw.bandwidth[kind].push_back(
          {field<double>(s, "bytes", path, kind), field<double>(s, "us", path, kind)});
    }
  }
  hw.embedding = embeddingFrom(member(j, "embedding_bag", path), path);
  for (const json& f : member(j, "foreach", path)) {
    ForeachPoint p{field<int64_t>(f, "tensors", path, "foreach"),
                   field<int64_t>(f, "elems", path, "foreach"), field<double>(f, "us", path, "foreach")};
    if (f.contains("op")) p.op = field<std::string>(f, "op", path, "foreach");
    if (f.contains("bytes")) p.bytes = field<double>(f, "bytes", path, "foreach");
    if (p.op.rfind("aten::_foreach_", 0) != 0 || p.bytes < 0) {
      ETB_INPUT_ERROR(SourceLoc{path}, "foreach: op must name an aten::_foreach_ overload and bytes "
                      "not be negative (got \"", p.op, "\", ", p.bytes, ")");
    }
    hw.foreach_ops.push_back(std::move(p));
  }
  for (const json& c : member(j, "collectives", path)) {
    hw.collectives.push_back({field<std::string>(c, "type", path, "collectives"),
                              field<int>(c, "group_size", path, "collectives"),
                              field<double>(c, "bytes", path, "collectives"),
                              field<double>(c, "us", path, "collectives"),
                              field<std::string>(c, "backend", path, "collectives")});
  }
  sortCurves(hw);
  return hw;
}

std::string reductionCurve(const std::string& kind, int64_t width) {
  return "reduction:" + kind + ":" + std::to_string(width);
}

std::string rowsCurve(const std::string& op_curve, int64_t row) {
  return op_curve + ":rows:" + std::to_string(row);
}

std::string poolCurve(const std::string& op, int64_t window) {
  return "pool:" + op + (window > 0 ? ":" + std::to_string(window) : "");
}

const std::set<std::string>& longTailOps() {
  static const std::set<std::string> ops = {
      "elu", "elu_backward", "leaky_relu", "leaky_relu_backward", "hardswish", "hardswish_backward",
      "hardsigmoid", "hardsigmoid_backward", "hardtanh", "hardtanh_backward", "softplus",
      "softplus_backward", "mish", "mish_backward", "binary_cross_entropy",
      "binary_cross_entropy_backward", "mse_loss", "mse_loss_backward", "smooth_l1_loss",
      "smooth_l1_loss_backward", "huber_loss", "huber_loss_backward", "upsample_bilinear2d",
      "upsample_bilinear2d_backward", "upsample_nearest2d", "upsample_nearest2d_backward",
      "reflection_pad2d", "reflection_pad2d_backward", "cumsum"};
  return ops;
}

std::string rngCurve(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rng:%g", p);
  return buf;
}

void sortCurves(HwProfile& hw) {
  const auto byBytes = [](const SizePoint& a, const SizePoint& b) { return a.bytes < b.bytes; };
  for (auto& [kind, curve] : hw.bandwidth) std::sort(curve.begin(), curve.end(), byBytes);
  std::sort(hw.cold_after.begin(), hw.cold_after.end(), byBytes);
  std::sort(hw.cold_kinds.begin(), hw.cold_kinds.end(), byBytes);
  std::sort(hw.memory.retention.begin(), hw.memory.retention.end(), byBytes);
  std::sort(hw.memory.release.begin(), hw.memory.release.end(), byBytes);
  auto& planes = hw.batchnorm_backward_planes.per_plane;
  std::sort(planes.begin(), planes.end(), byBytes);
}

HwProfile readProfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) ETB_INPUT_ERROR(SourceLoc{path}, "cannot open the hardware profile");
  std::stringstream ss;
  ss << in.rdbuf();
  return profileFromJson(ss.str(), path);
}

void checkProfileMatches(const HwProfile& hw, const std::string& path,
                         const std::string& torch_version, const std::string& device) {
  if (hw.identity.torch_version != torch_version) {
    ETB_INPUT_ERROR(SourceLoc{path}, "identity.torch_version: profile taken with libtorch ",
                    hw.identity.torch_version, ", this is ", torch_version,
                    "; re-run et_profile_hw with this build");
  }
  const auto kind = [](const std::string& d) { return d.substr(0, d.find(':')); };
  if (kind(hw.identity.device) != kind(device)) {
    ETB_INPUT_ERROR(SourceLoc{path}, "identity.device: profile measured on ", hw.identity.device,
                    ", prediction asked for ", device);
  }
}

}  // namespace etb::predict
