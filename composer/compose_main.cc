// SPDX-License-Identifier: MIT
//
// et_compose IN [--select S]... [--repeat K] [--scale-dim OLD=NEW]...
//            [--dtype [FROM=]TO] [--world-size N] [--concat T] [--interleave-comm T]
//            (-o OUT | --dry-run) | --recipe R.json
// Builds what-if workloads from recorded traces; every result replays and
// converts like a recorded trace.
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "composer/compose.h"
#include "core/tools/tool_main.h"

namespace {
using namespace etb;

struct Flags {
  std::string input, recipe, output;
  std::vector<std::string> select, scale_dim, concat;
  std::string dtype, interleave;
  int64_t repeat = 0, world_size = 0;
  bool dry_run = false, no_check = false;
};

void addFlags(CLI::App& app, Flags& f) {
  app.add_option("input", f.input, "trace (.json[.gz] or .et[.gz]), per-rank pattern with %d, or folder");
  app.add_option("--recipe", f.recipe, "JSON recipe (schemas/compose_recipe.schema.json)");
  app.add_option("--select", f.select,
                 "keep op:REGEX, scope:REGEX, phase:forward|backward|optimizer, iter:N, step:N, "
                 "ids:A-B, compute, comm (repeatable; all must hold)");
  app.add_option("--concat", f.concat, "append another trace (repeatable)");
  app.add_option("--repeat", f.repeat, "copies of each iteration's body, chained through their data");
  app.add_option("--scale-dim", f.scale_dim, "substitute a dimension, OLD=NEW (repeatable)");
  app.add_option("--dtype", f.dtype, "convert tensors: TO (from float32) or FROM=TO, e.g. bf16");
  app.add_option("--interleave-comm", f.interleave, "place this trace's collectives between the compute ops");
  app.add_option("--world-size", f.world_size, "rewrite groups and collectives for N ranks");
  app.add_option("-o,--output", f.output, "output: .json(.gz) ET or .et(.gz) Chakra; %d = rank");
  app.add_flag("--dry-run", f.dry_run, "print what would change; write nothing");
  app.add_flag("--no-check", f.no_check, "skip the meta-device shape check (not recommended)");
}

bool anyStepFlag(const Flags& f) {
  return !f.select.empty() || !f.scale_dim.empty() || !f.concat.empty() || !f.dtype.empty() ||
         !f.interleave.empty() || f.repeat != 0 || f.world_size != 0;
}

// The command line's steps, in the order the question reads.
compose::Recipe recipeFromFlags(const Flags& f) {
  using compose::Step;
  using compose::StepKind;
  compose::Recipe r;
  r.input = f.input;
  auto add = [&](Step s) { r.steps.push_back(std::move(s)); };
  if (!f.select.empty()) add(Step{StepKind::kSelect, f.select});
  for (const std::string& c : f.concat) add(Step{StepKind::kConcat, {}, 0, 0, 0, {}, {}, c});
  if (f.repeat != 0) add(Step{StepKind::kRepeat, {}, f.repeat});
  for (const std::string& d : f.scale_dim) {
    Step s{StepKind::kScaleDim};
    compose::parseDimSubstitution(d, &s.from, &s.to);
    add(s);
  }
  if (!f.dtype.empty()) {
    Step s{StepKind::kDtype};
    compose::parseDtypeChange(f.dtype, &s.dtype_from, &s.dtype_to);
    add(s);
  }
  if (!f.interleave.empty()) add(Step{StepKind::kInterleave, {}, 0, 0, 0, {}, {}, f.interleave});
  if (f.world_size != 0) add(Step{StepKind::kWorldSize, {}, f.world_size});
  return r;
}

int composeMain(const Flags& f) {
  compose::Recipe r;
  if (!f.recipe.empty()) {
    if (anyStepFlag(f)) {
      ETB_INPUT_ERROR(SourceLoc{"--recipe"}, "give the steps either in the recipe or as flags, not both");
    }
    r = compose::readRecipe(f.recipe);
    if (!f.input.empty()) r.input = f.input;
  } else {
    r = recipeFromFlags(f);
  }
  if (!f.output.empty()) r.output = f.output;
  r.dry_run = f.dry_run;
  r.check = r.check && !f.no_check;
  const compose::ComposeResult res = compose::compose(r, std::cerr);
  compose::printChanges(res.before, res.after, std::cout);
  if (r.check) compose::printCheckReport(res.check, std::cout);
  else std::cout << "# shape check skipped (--no-check)\n";
  for (const std::string& p : res.written) std::cout << "wrote " << p << "\n";
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Compose what-if workloads from execution traces", "et_compose"};
  Flags flags;
  addFlags(app, flags);
  return runTool(app, argc, argv, [&] { return composeMain(flags); });
}
