// SPDX-License-Identifier: MIT
//
// The suite-level files: manifest.json, CMakeLists.txt (one build for all
// programs, one shared runtime), run_suite.sh and its report combiner.
#pragma once

#include <string>
#include <vector>

#include "generator/emit_project.h"
#include "generator/suite.h"

namespace etb::gen {

void writeSuiteFiles(const std::string& out_dir, const FleetScan& scan,
                     const std::vector<JobFacts>& facts, const std::vector<Group>& groups,
                     const std::string& weight_basis, const std::vector<ProgramInfo>& programs);

}  // namespace etb::gen
