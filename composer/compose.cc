// SPDX-License-Identifier: MIT
#include "composer/compose.h"

#include "composer/scale.h"
#include "composer/selector.h"
#include "composer/splice.h"
#include "composer/world_size.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/trace_io.h"

namespace etb::compose {
namespace {
using trace::Trace;

std::vector<Trace> readRanks(const std::string& pattern) {
  std::vector<Trace> out;
  for (const std::string& p : trace::expandRankPaths(pattern)) out.push_back(trace::readTrace(p));
  if (out.empty()) ETB_INPUT_ERROR(SourceLoc{pattern}, "no trace found");
  return out;
}

// The other trace of a concat/interleave for rank r: its own rank's when it
// has as many ranks, else its first.
const Trace& partner(const std::vector<Trace>& other, size_t r) {
  return other.size() > r ? other[r] : other[0];
}

void spliceWith(std::vector<Trace>& ranks, const Step& s) {
  const std::vector<Trace> other = readRanks(s.path);
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r] = s.kind == StepKind::kConcat ? concatTraces(ranks[r], partner(other, r))
                                           : interleaveTraces(ranks[r], partner(other, r));
  }
}

void applyStep(std::vector<Trace>& ranks, const Step& s, std::ostream& log) {
  const size_t nodes_before = ranks[0].nodes.size();
  switch (s.kind) {
    case StepKind::kSelect: {
      std::vector<Selector> sel;
      for (const std::string& x : s.selectors) sel.push_back(parseSelector(x));
      for (Trace& t : ranks) t = selectNodes(t, sel);
      break;
    }
    case StepKind::kRepeat: {
      RepeatStats st;
      for (Trace& t : ranks) t = repeatTrace(std::move(t), static_cast<int>(s.count), &st);
      log << "  " << st.copies << " extra copies per iteration, " << st.chained
          << " inputs chained to the previous copy (rank 0 last)\n";
      break;
    }
    case StepKind::kScaleDim: {
      ScaleStats st;
      for (Trace& t : ranks) st = scaleDimension(t, s.from, s.to);
      log << "  " << st.shapes << " tensor shapes, " << st.int_args << " int arguments, " << st.derived
          << " derived output shapes, " << st.repacked << " flat buffers re-tiled, " << st.comms
          << " comm calls, " << st.timed_nodes
          << " durations rescaled (rank 0 last)\n";
      break;
    }
    case StepKind::kDtype: {
      DtypeStats st;
      for (Trace& t : ranks) st = changeDtype(t, s.dtype_from, s.dtype_to);
      log << "  " << st.tensors << " tensors, " << st.scalar_args << " dtype arguments, " << st.comms
          << " comm calls converted, " << st.derived
          << " outputs take the dtype libtorch derives (rank 0 last)\n";
      break;
    }
    case StepKind::kWorldSize: {
      WorldStats st;
      ranks = changeWorldSize(ranks, s.count, &st);
      log << "  world " << st.old_world << " -> " << st.new_world << ": " << st.resized
          << " collective calls resized, " << st.kept << " kept (all ranks)\n";
      break;
    }
    case StepKind::kConcat:
    case StepKind::kInterleave:
      spliceWith(ranks, s);
      break;
  }
  log << "  nodes (rank 0): " << nodes_before << " -> " << ranks[0].nodes.size() << "\n";
}
}  // namespace

std::vector<Trace> applySteps(std::vector<Trace> ranks, const std::vector<Step>& steps, std::ostream& log) {
  for (const Step& s : steps) {
    log << "et_compose: " << s.describe() << "\n";
    applyStep(ranks, s, log);
  }
  return ranks;
}

std::string rankPath(const std::string& pattern, size_t rank, size_t count) {
  if (count > 1 && pattern.find("%d") == std::string::npos) {
    ETB_INPUT_ERROR(SourceLoc{pattern}, "the result has ", count,
                    " ranks: the output needs %d where the rank goes (e.g. out.rank%d.json)");
  }
  return rankFile(pattern, rank);
}

void printCheckReport(const CheckReport& report, std::ostream& os) {
  os << "# shape check: " << report.ops << " ops (" << report.cached
     << " identical calls checked once)\n";
  for (const auto& [method, n] : report.by_method) os << "#   " << method << ": " << n << "\n";
  for (const auto& [what, n] : report.detail) os << "#     " << what << " x" << n << "\n";
}

ComposeResult compose(const Recipe& recipe, std::ostream& log) {
  if (recipe.input.empty()) ETB_INPUT_ERROR(SourceLoc{"et_compose"}, "no input trace given");
  if (recipe.output.empty() && !recipe.dry_run) {
    ETB_INPUT_ERROR(SourceLoc{"et_compose"}, "no output given (-o PATH, or --dry-run)");
  }
  ComposeResult r;
  std::vector<Trace> in = readRanks(recipe.input);
  r.before = summarize(in);
  r.ranks = applySteps(std::move(in), recipe.steps, log);
  r.after = summarize(r.ranks);
  if (recipe.check) {
    CheckCache cache;
    CheckOptions options;
    options.cache = &cache;
    for (const Trace& t : r.ranks) mergeReports(r.check, checkShapes(t, options));
  }
  if (recipe.dry_run) return r;
  for (size_t k = 0; k < r.ranks.size(); ++k) {
    const std::string path = rankPath(recipe.output, k, r.ranks.size());
    trace::writeTrace(r.ranks[k], path);
    r.written.push_back(path);
  }
  return r;
}

}  // namespace etb::compose
