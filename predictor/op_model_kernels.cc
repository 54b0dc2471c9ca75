// SPDX-License-Identifier: MIT
// The op models whose cost depends on more than bytes: embedding lookups
// (table, index count, distinct rows) and reductions (which dims).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "predictor/heap_model.h"
#include "predictor/op_model.h"

namespace etb::predict {
namespace {

double lg(double x) { return std::log2(std::max(x, 1.0)); }

// Least-squares line us = fixed + per_row * lookups through (lookups, us).
struct Line {
  double fixed = 0, per_row = 0;
};
Line fitLine(const std::vector<std::pair<double, double>>& pts) {
  double n = 0, sx = 0, sxx = 0, sy = 0, sxy = 0;
  for (const auto& [x, y] : pts) {
    n += 1;
    sx += x;
    sxx += x * x;
    sy += y;
    sxy += x * y;
  }
  const double det = n * sxx - sx * sx;
  if (n < 2 || det <= 0) return {};
  const double b = (n * sxy - sx * sy) / det;
  return {(sy - b * sx) / n, b};
}

// One measured backward less its fill and sort: lookups, distinct rows, us.
struct Residual {
  double lookups = 0, unique = 0, us = 0;
};

// us = a * lookups + b * unique, a and b not negative, least squares
// relative to each point's time (the largest would set both otherwise).
std::pair<double, double> fitLookupsAndRows(const std::vector<Residual>& pts) {
  double snn = 0, snu = 0, suu = 0, sny = 0, suy = 0;
  for (const Residual& p : pts) {
    const double w = 1.0 / std::max(p.us * p.us, 1e-6);
    snn += w * p.lookups * p.lookups;
    snu += w * p.lookups * p.unique;
    suu += w * p.unique * p.unique;
    sny += w * p.lookups * p.us;
    suy += w * p.unique * p.us;
  }
  const double det = snn * suu - snu * snu;
  double a = det > 1e-300 ? (sny * suu - suy * snu) / det : -1;
  double b = det > 1e-300 ? (suy * snn - sny * snu) / det : -1;
  if (a < 0 || b < 0) {  // one term alone, whichever fits better
    const double a1 = snn > 0 ? std::max(sny / snn, 0.0) : 0, b1 = suu > 0 ? std::max(suy / suu, 0.0) : 0;
    double ea = 0, eb = 0;
    for (const Residual& p : pts) {
      const double w = 1.0 / std::max(p.us * p.us, 1e-6);
      ea += w * std::pow(p.us - a1 * p.lookups, 2);
      eb += w * std::pow(p.us - b1 * p.unique, 2);
    }
    a = ea <= eb ? a1 : 0;
    b = ea <= eb ? 0 : b1;
  }
  return {a, b};
}

// The value at `at` of points sorted by their first: linear between the
// two around it, the nearest one's beyond them (a table's log(measured /
// mechanism) in log lookups; a table value in lg rows, then lg width).
double linearAt(const std::vector<std::pair<double, double>>& pts, double at) {
  if (at <= pts.front().first) return pts.front().second;
  if (at >= pts.back().first) return pts.back().second;
  size_t hi = 1;
  while (pts[hi].first < at) ++hi;
  const auto& [x0, y0] = pts[hi - 1];
  const auto& [x1, y1] = pts[hi];
  return y0 + (y1 - y0) * (at - x0) / (x1 - x0);
}

// A table's value at (lg rows, lg dim) from the measured tables, read as
// the grid they are: along the rows of each measured width (linear in lg
// rows between the two nearest, the nearest beyond them), then across the
// widths (linear in lg width between two; beyond them the nearest two
// widths' power of the width carried on, held between 0 and 1: a cost at
// most in proportion to the row's bytes). Inverse-distance neighbours in
// both at once read a 128-wide table as the widest measured (dlrm at dim
// 128 replayed its lookups at 2.2-2.8x the 64-wide prediction), and mixed
// the widths: a 5,000-row table's warm lookup at dim 64 read 1.3 ns, under
// both measured 64-wide tables beside it (2.8 and 9.2), from a 16-wide
// point of 0.1. `as`: the values are natural logs of costs, or costs
// (where one not above zero is not carried beyond the widths), or ratios
// (the nearest width's beyond them).
enum class TableValues { kLogCost, kCost, kRatio };
double tableValue(const std::vector<KnnPoint<2>>& pts, const std::array<double, 2>& x, TableValues as) {
  std::map<double, std::vector<std::pair<double, double>>> by_width;  // lg dim -> (lg rows, value)
  for (const KnnPoint<2>& p : pts) by_width[p.x[1]].push_back({p.x[0], p.value});
  if (by_width.empty()) return 0;
  std::vector<std::pair<double, double>> across;  // (lg dim, value at x[0])
  for (auto& [width, along] : by_width) {
    std::sort(along.begin(), along.end());
    across.push_back({width, linearAt(along, x[0])});
  }
  if (as == TableValues::kRatio || across.size() == 1 ||
      (x[1] >= across.front().first && x[1] <= across.back().first)) {
    return linearAt(across, x[1]);
  }
  const bool logged = as == TableValues::kLogCost;
  const bool wider = x[1] > across.back().first;
  const auto& [edge, at_edge] = wider ? across.back() : across.front();
  const auto& [next, at_next] = wider ? across[across.size() - 2] : across[1];
  if (!logged && (at_edge <= 0 || at_next <= 0)) return at_edge;
  const double le = logged ? at_edge : std::log(at_edge), ln = logged ? at_next : std::log(at_next);
  const double power = std::clamp((le - ln) / ((edge - next) * M_LN2), 0.0, 1.0);
  const double v = le + power * (x[1] - edge) * M_LN2;
  return logged ? v : std::exp(v);
}

// -expm1(n * log1p(-p)): the chance that n draws of probability p hit a row.
double hitOnce(double n, double p) { return -std::expm1(n * std::log1p(-std::min(p, 1.0))); }

// Zipf(alpha) over m ranks: the first kExact terms summed, the tail as an
// integral in log space (Simpson), both for the normaliser and the count.
constexpr double kExact = 4096;
double zipfUnique(double m, double alpha, double n) {
  const double head = std::min(m, kExact);
  double h = 0;
  for (double k = 1; k <= head; ++k) h += std::pow(k, -alpha);
  const double lo = head + 0.5, hi = m + 0.5;
  if (m > head) {
    h += std::fabs(alpha - 1) < 1e-9 ? std::log(hi / lo)
                                     : (std::pow(hi, 1 - alpha) - std::pow(lo, 1 - alpha)) / (1 - alpha);
  }
  double u = 0;
  for (double k = 1; k <= head; ++k) u += hitOnce(n, std::pow(k, -alpha) / h);
  if (m > head) {
    constexpr int kSteps = 512;  // even
    const double a = std::log(lo), step = (std::log(hi) - a) / kSteps;
    double s = 0;
    for (int i = 0; i <= kSteps; ++i) {
      const double x = std::exp(a + i * step);
      const double f = hitOnce(n, std::pow(x, -alpha) / h) * x;  // dx = x dy
      s += f * (i == 0 || i == kSteps ? 1 : (i % 2 ? 4 : 2));
    }
    u += s * step / 3;
  }
  return u;
}
}  // namespace

double expectedUniqueRows(double rows, double lookups, const std::string& dist) {
  if (rows <= 0 || lookups <= 0) return 0;
  if (dist.rfind("zipf:", 0) == 0) {
    // et_replay's sampler caps the ranks at 2^22 (replayer/zipf.h).
    return zipfUnique(std::min(rows, 4194304.0), std::stod(dist.substr(5)), lookups);
  }
  return rows * hitOnce(lookups, 1 / rows);
}

void OpModel::fitEmbedding() {
  const bool want_zipf = dist_.rfind("zipf", 0) == 0;
  // Per table (rows, dim): a line through its poolings gives the time per
  // looked-up row and, at zero rows, the fixed part (forward: the call and
  // the output; dense backward: the zero-filled [rows, dim] gradient).
  std::map<std::pair<int64_t, int64_t>, std::vector<const EmbeddingPoint*>> tables, both;
  for (const EmbeddingPoint& e : hw_.embedding) {
    if ((e.dist.rfind("zipf", 0) == 0) == want_zipf) tables[{e.rows, e.dim}].push_back(&e);
    both[{e.rows, e.dim}].push_back(&e);
  }
  for (const auto& [key, pts] : tables) {
    std::vector<std::pair<double, double>> fwd, bwd, cold;
    for (const EmbeddingPoint* e : pts) {
      const double n = static_cast<double>(e->batch * e->pooling);
      fwd.push_back({n, e->fwd_us});
      bwd.push_back({n, e->bwd_us});
      if (e->fwd_cold_us > 0) cold.push_back({n, e->fwd_cold_us});
    }
    if (fwd.size() < 2) continue;
    const std::array<double, 2> x{lg(static_cast<double>(key.first)), lg(static_cast<double>(key.second))};
    const Line f = fitLine(fwd), b = fitLine(bwd);
    emb_fwd_row_.push_back({x, std::log(std::max(f.per_row, 1e-4))});
    emb_fwd_fixed_.push_back({x, std::log(std::max(f.fixed, 0.1))});
    emb_bwd_row_.push_back({x, std::log(std::max(b.per_row, 1e-4))});
    emb_bwd_fill_.push_back({static_cast<double>(key.first * key.second) * 4, std::max(b.fixed, 0.1)});
    if (cold.size() >= 2) emb_cold_row_.push_back({x, std::log(std::max(fitLine(cold).per_row, 1e-4))});
    if (hw_.gpu()) {
      std::vector<std::pair<double, double>> logs;
      for (const auto& [n, us] : bwd) logs.push_back({std::log(n), std::log(std::max(us, 0.1))});
      const Line l = fitLine(logs);
      emb_bwd_log_at1_.push_back({x, l.fixed});
      emb_bwd_log_slope_.push_back({x, std::clamp(l.per_row, 0.0, 1.0)});
    }
  }
  // A cold lookup pays a miss per distinct row it touches, not per lookup:
  // with 10,000 uniform lookups a 5,000-row table fetches each row once
  // and the rest hit, so a line through the lookups (emb_cold_row_) read
  // the small tables as never cold. Per table, both distributions (their
  // distinct rows differ at the same lookups): the evicted calls' extra
  // time over the warm ones, summed, over the distinct rows, summed (the
  // largest calls, whose extra is least noise, weigh most).
  for (const auto& [key, pts] : both) {
    double extra = 0, unique = 0;
    for (const EmbeddingPoint* e : pts) {
      if (e->fwd_rows_cold_us <= 0) continue;
      extra += std::max(e->fwd_rows_cold_us - e->fwd_us, 0.0);
      unique += expectedUniqueRows(static_cast<double>(key.first), static_cast<double>(e->batch * e->pooling), e->dist);
    }
    if (unique <= 0) continue;
    emb_row_miss_.push_back({{lg(static_cast<double>(key.first)), lg(static_cast<double>(key.second))},
                             std::log(std::max(extra / unique, 1e-6))});
  }
  std::sort(emb_bwd_fill_.begin(), emb_bwd_fill_.end(),
            [](const SizePoint& a, const SizePoint& b) { return a.bytes < b.bytes; });
  // A GPU's backward (a GPU profile has launch times) is a sort and a
  // segmented reduction behind a read-back of the segment count: the fill +
  // sort + per lookup mechanism, fitted to its synchronised calls,
  // predicted dlrm's 2.3x the replayed calls on an H100. There a power law
  // in the lookups through each table's measured calls stands (20x the
  // lookups took 2.1x the time on the H100).
  if (warm_.count("op:sort_int64") && !hw_.gpu()) fitEmbeddingBackward(tables, both);
}

// The dense backward (sum mode) zero-fills a [rows, dim] gradient, sorts
// the indices, then adds each looked-up bag's gradient row into its row:
// a cost per lookup and one per distinct row (its gradient line fetched
// and written back; repeats of a hot row hit the cache). Both distributions
// of a table share a and b; what tells them apart is how many distinct
// rows their lookups touch (expectedUniqueRows).
//
// That mechanism leaves out what the measured calls show: a fixed part per
// call and a sort whose rate depends on the values sorted (Zipf indices
// sort faster than uniform ones). So each table of the distribution asked
// for also keeps measured / mechanism at each measured lookup count, and
// the extra time of a call with the caches flushed (a line through the
// lookups; nothing where only the warm call was measured: the gradient is
// too large for the LLC to keep anyway).
void OpModel::fitEmbeddingBackward(const EmbeddingTables& family, const EmbeddingTables& both) {
  std::map<std::pair<int64_t, int64_t>, std::pair<double, double>> ab;
  for (const auto& [key, pts] : both) {
    const double rows = static_cast<double>(key.first), dim = static_cast<double>(key.second);
    std::vector<Residual> res;
    for (const EmbeddingPoint* e : pts) {
      const double n = static_cast<double>(e->batch * e->pooling);
      const double r = e->bwd_us - measuredFillUs(*e) - curveUs(warm_.at("op:sort_int64"), 8 * n);
      res.push_back({n, expectedUniqueRows(rows, n, e->dist), std::max(r, 0.0)});
    }
    if (res.size() < 2) continue;
    ab[key] = fitLookupsAndRows(res);
    const std::array<double, 2> x{lg(rows), lg(dim)};
    emb_bwd_lookup_.push_back({x, ab[key].first});
    emb_bwd_unique_.push_back({x, ab[key].second});
  }
  for (const auto& [key, pts] : family) {
    if (!ab.count(key)) continue;
    const double rows = static_cast<double>(key.first), dim = static_cast<double>(key.second);
    const auto [a, b] = ab[key];
    TableRatio tr{{lg(rows), lg(dim)}, {}};
    std::vector<std::pair<double, double>> cold;
    for (const EmbeddingPoint* e : pts) {
      const double n = static_cast<double>(e->batch * e->pooling);
      const double mech = measuredFillUs(*e) + curveUs(warm_.at("op:sort_int64"), 8 * n) + a * n +
                          b * expectedUniqueRows(rows, n, e->dist);
      if (mech > 0 && e->bwd_us > 0) tr.log_ratio.push_back({std::log(n), std::log(e->bwd_us / mech)});
      if (e->bwd_cold_us > 0) cold.push_back({n, e->bwd_cold_us - e->bwd_us});
    }
    std::sort(tr.log_ratio.begin(), tr.log_ratio.end());
    if (!tr.log_ratio.empty()) emb_bwd_ratio_.push_back(tr);
    const Line c = cold.size() >= 2 ? fitLine(cold) : Line{};
    emb_bwd_cold_fixed_.push_back({tr.x, std::max(c.fixed, 0.0)});
    emb_bwd_cold_row_.push_back({tr.x, std::max(c.per_row, 0.0)});
  }
}

// The zero-filled gradient of a measured backward call: timed beside it
// (fill_us), else the curves'. Either way the replay's own first touches
// are the heap model's to add (embeddingBackwardUs takes the fill alone).
double OpModel::measuredFillUs(const EmbeddingPoint& e) const {
  if (e.fill_us > 0) return e.fill_us;
  return tableFillUs(static_cast<double>(e.rows) * static_cast<double>(e.dim) * 4);
}

// Zero-filling a table's gradient: the fill curve (one write pass); a
// table glibc maps afresh on every call also pays its first touch in the
// benchmark (the heap model adds the replay's own).
double OpModel::tableFillUs(double bytes) const {
  const double pages = bytes >= HeapModel::kMmapMax ? bytes / hw_.memory.page_bytes : 0;
  return zeroFillUs(bytes) + pages * hw_.memory.fault_us_per_page;
}

// The in-place "fill" curve (over the bytes written); profiles without it
// take half the unary kernel's read + write.
double OpModel::zeroFillUs(double bytes) const {
  const auto fill = warm_.find("fill");
  if (fill != warm_.end()) return std::max(curveUs(fill->second, bytes), hw_.dispatch_us);
  return memoryUs("unary", 2 * bytes) / 2;
}

double OpModel::embeddingBackwardUs(double rows, double dim, double lookups, double cold) const {
  const std::array<double, 2> x{lg(rows), lg(dim)};
  const auto cost = [&](const std::vector<KnnPoint<2>>& pts) { return tableValue(pts, x, TableValues::kCost); };
  const double mech = zeroFillUs(rows * dim * 4) + curveUs(warm_.at("op:sort_int64"), 8 * lookups) +
                      cost(emb_bwd_lookup_) * lookups +
                      cost(emb_bwd_unique_) * expectedUniqueRows(rows, lookups, dist_);
  std::vector<KnnPoint<2>> ratios;
  for (const TableRatio& t : emb_bwd_ratio_) ratios.push_back({t.x, linearAt(t.log_ratio, std::log(lookups))});
  const double warm = ratios.empty() ? mech : mech * std::exp(tableValue(ratios, x, TableValues::kRatio));
  if (cold <= 0 || emb_bwd_cold_row_.empty()) return warm;
  const double extra = cost(emb_bwd_cold_fixed_) + cost(emb_bwd_cold_row_) * lookups;
  return warm + cold * std::max(extra, 0.0);
}

double OpModel::embeddingUs(const OpShapes& sh, bool backward, double cold) const {
  // forward: (weight[rows, dim], indices, offsets, ...); backward: (grad[bags,
  // dim], indices, ..., num_weights): the table's rows are then the largest
  // Int argument (num_weights; the others are flags, mode and padding_idx).
  // nn.Embedding's backward takes the gradient shaped as the lookups were
  // ([batch, seq, dim] in a language model): the width is its last size.
  const TensorFacts* first = sh.inputArg(0);
  const TensorFacts* idx = sh.inputArg(1);
  if (!first || !idx || first->shape.empty() || (!backward && first->shape.size() != 2)) {
    return memoryUs("copy", sh.bytes());
  }
  double rows = static_cast<double>(first->shape[0]);
  const double dim = static_cast<double>(first->shape.back());
  const double lookups = std::max(1.0, idx->numel);
  if (backward) {
    rows = 0;
    for (const trace::Value* v : sh.args) {
      if (v->kind == trace::ValueKind::kInt && v->i > 1) rows = std::max(rows, static_cast<double>(v->i));
    }
  }
  if (emb_fwd_row_.empty()) return memoryUs("copy", lookups * dim * 4 * 2);
  const std::array<double, 2> x{lg(rows), lg(dim)};
  const auto cost = [&](const std::vector<KnnPoint<2>>& logs) {
    return std::exp(tableValue(logs, x, TableValues::kLogCost));
  };
  if (backward) {
    if (!emb_bwd_log_at1_.empty()) {
      return cost(emb_bwd_log_at1_) *
             std::exp(tableValue(emb_bwd_log_slope_, x, TableValues::kRatio) * std::log(lookups));
    }
    if (!emb_bwd_lookup_.empty()) return embeddingBackwardUs(rows, dim, lookups, cold);
    return curveUs(emb_bwd_fill_, rows * dim * 4) + cost(emb_bwd_row_) * lookups;
  }
  const double fixed = cost(emb_fwd_fixed_);
  const double warm = fixed + cost(emb_fwd_row_) * lookups;
  if (cold <= 0) return warm;
  if (!emb_row_miss_.empty()) return warm + cold * cost(emb_row_miss_) * expectedUniqueRows(rows, lookups, dist_);
  if (emb_cold_row_.empty()) return warm;
  // The fixed part stays warm: a flush also evicts the code and the
  // dispatcher's tables, which a replay calling ops back to back keeps hot.
  const double flushed = fixed + cost(emb_cold_row_) * lookups;
  return warm + cold * std::max(0.0, flushed - warm);
}

// A reduction reads the curve of its shape family at its width: "outer"
// (a contiguous run of `inner` outputs, each gathering a strided column)
// or "rows" (rows of `reduced`), log-linear in log width between the two
// nearest measured widths and clamped beyond them. A full reduction, or a
// profile without the families, reads the "reduction" curve.
OpEstimate OpModel::reductionEstimate(const OpShapes& sh, double cold, double l3) const {
  const ReduceShape r = reduceShapeOf(sh);
  const double bytes = r.valid ? r.bytes : sh.inputBytes();
  const char* family = r.inner > 1 ? "outer" : r.outer > 1 ? "rows" : nullptr;
  std::vector<int64_t> widths;
  if (family) {
    for (const int64_t w : family[0] == 'o' ? std::vector<int64_t>(std::begin(kOuterWidths), std::end(kOuterWidths))
                                            : std::vector<int64_t>(std::begin(kReduceRowLengths), std::end(kReduceRowLengths))) {
      if (warm_.count(reductionCurve(family, w))) widths.push_back(w);
    }
  }
  if (widths.empty()) return {memoryUs("reduction", bytes, cold, l3), "memory:reduction", false};
  const double width = family[0] == 'o' ? r.inner : r.reduced;
  const auto at = [&](int64_t w) { return memoryUs(reductionCurve(family, w), bytes, cold, l3); };
  size_t hi = 0;
  while (hi < widths.size() && static_cast<double>(widths[hi]) < width) ++hi;
  const std::string label = std::string("memory:reduction:") + family;
  if (hi == 0) return {at(widths.front()), label, false};
  if (hi == widths.size()) return {at(widths.back()), label, false};
  const double w0 = static_cast<double>(widths[hi - 1]), w1 = static_cast<double>(widths[hi]);
  const double f = std::log(width / w0) / std::log(w1 / w0);
  return {std::exp((1 - f) * std::log(at(widths[hi - 1])) + f * std::log(at(widths[hi]))), label, false};
}

// Log-linear in log row length between the two nearest measured lengths,
// clamped beyond them, as reductions are by width: rows of whole vectors
// on the lengths of kRowLengths (the rows-of-256 curve among them), rows
// that end in a tail on those of kTailRowLengths (when measured). The row
// is the softmax's dim: input 1 of the forward (self, dim, ...), input 2
// of the backward (grad, output, dim, dtype). Whole vectors are 8 floats
// (AVX2's); on a CPU whose kernels run 16 at once, rows of 8 mod 16 would
// need the tail curves too.
std::optional<OpEstimate> OpModel::softmaxRowsEstimate(const std::string& name,
                                                       const std::string& curve,
                                                       const OpShapes& sh, double cold,
                                                       double l3) const {
  if (!std::any_of(std::begin(kRowsOps), std::end(kRowsOps),
                   [&](const char* op) { return curve == std::string("op:") + op; })) {
    return std::nullopt;
  }
  const size_t dim_arg = name.find("backward") != std::string::npos ? 2 : 1;
  const TensorFacts* x = sh.inputArg(0);
  if (!x || x->shape.empty() || dim_arg >= sh.args.size() || !sh.args[dim_arg] ||
      sh.args[dim_arg]->kind != trace::ValueKind::kInt) {
    return std::nullopt;
  }
  const auto rank = static_cast<int64_t>(x->shape.size());
  const int64_t dim = sh.args[dim_arg]->i < 0 ? sh.args[dim_arg]->i + rank : sh.args[dim_arg]->i;
  if (dim != rank - 1) return std::nullopt;
  const int64_t row_len = std::max<int64_t>(1, x->shape.back());
  const auto measured = [&](const auto& lengths) {
    std::vector<std::pair<double, std::string>> at;  // row length, curve
    for (const int64_t r : lengths) {
      if (warm_.count(rowsCurve(curve, r))) at.emplace_back(static_cast<double>(r), rowsCurve(curve, r));
    }
    return at;
  };
  std::vector<std::pair<double, std::string>> at;
  if (row_len % kRowVectorFloats != 0) at = measured(kTailRowLengths);
  if (at.empty()) {
    at = measured(kRowLengths);
    if (at.empty()) return std::nullopt;
    if (warm_.count(curve)) at.emplace_back(256.0, curve);
  }
  std::sort(at.begin(), at.end());
  const double row = static_cast<double>(row_len);
  const double bytes = sh.bytes();
  return OpEstimate{lengthCurvesUs(at, row, bytes, cold, l3), "memory:" + curve + ":rows", false};
}

double OpModel::lengthCurvesUs(const std::vector<std::pair<double, std::string>>& at, double length,
                               double bytes, double cold, double l3) const {
  const auto us = [&](size_t i) { return memoryUs(at[i].second, bytes, cold, l3); };
  size_t hi = 0;
  while (hi < at.size() && at[hi].first < length) ++hi;
  if (hi == 0) return us(0);
  if (hi == at.size()) return us(at.size() - 1);
  const double f = std::log(length / at[hi - 1].first) / std::log(at[hi].first / at[hi - 1].first);
  return std::exp((1 - f) * std::log(us(hi - 1)) + f * std::log(us(hi)));
}

}  // namespace etb::predict
