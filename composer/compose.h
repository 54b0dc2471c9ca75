// SPDX-License-Identifier: MIT
//
// The composer's one entry point: read the input (one trace or one per
// rank), apply the recipe's steps in order, check every op's shapes, and
// write one file per rank (or, with dry_run, only say what would change).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "composer/recipe.h"
#include "composer/shape_check.h"
#include "composer/summary.h"
#include "core/model/trace.h"

namespace etb::compose {

struct ComposeResult {
  std::vector<trace::Trace> ranks;
  TraceSummary before, after;
  CheckReport check;
  std::vector<std::string> written;  // output paths
};

// Applies `recipe.steps` to `ranks` (one trace per rank) in order; writes
// one line per step to `log`.
std::vector<trace::Trace> applySteps(std::vector<trace::Trace> ranks, const std::vector<Step>& steps,
                                     std::ostream& log);

// The output path of `rank` of `count`: "%d" in `pattern` becomes the rank;
// a pattern without "%d" is only valid for one rank (InputError).
std::string rankPath(const std::string& pattern, size_t rank, size_t count);

// Runs the whole recipe. Throws InputError for bad input and for a result
// whose shapes cannot be right (see checkShapes).
ComposeResult compose(const Recipe& recipe, std::ostream& log);

// How each op was checked, one line per method, for the terminal.
void printCheckReport(const CheckReport& report, std::ostream& os);

}  // namespace etb::compose
