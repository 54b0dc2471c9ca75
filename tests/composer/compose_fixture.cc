// SPDX-License-Identifier: MIT
#include "tests/composer/compose_fixture.h"

#include <memory>

#include "core/trace_io.h"
#include "replayer/op_selection.h"
#include "tests/test_util.h"

namespace etb::test {

std::string fleetPath(const std::string& name) {
  const std::string dir = std::string(ETB_SOURCE_DIR) + "/fleet_samples/" + name + "/";
  return name == "ddp2" ? dir + "ddp2.rank0.et.json.gz" : dir + name + ".et.json.gz";
}

const trace::Trace& fleetSample(const std::string& name) {
  static std::map<std::string, std::unique_ptr<trace::Trace>> cache;
  auto& slot = cache[name];
  if (!slot) slot = std::make_unique<trace::Trace>(trace::readTrace(fleetPath(name)));
  return *slot;
}

std::map<std::string, uint64_t> topLevelOps(const trace::Trace& t) {
  std::map<std::string, uint64_t> out;
  std::vector<trace::Iteration> its = t.iterations;
  if (its.empty()) its.push_back(replay::chooseIteration(t, 0));
  for (const trace::Iteration& it : its) {
    for (const replay::SelectedNode& s : replay::selectNodes(t, it)) {
      ++out[std::string(t.name(t.nodes[s.index]))];
    }
  }
  return out;
}

uint64_t topLevelCount(const trace::Trace& t) {
  uint64_t n = 0;
  for (const auto& [name, c] : topLevelOps(t)) n += c;
  return n;
}

int runTool(const std::string& tool, const std::string& args, std::string* output) {
  return runCommand(tool + " " + args, output);
}

}  // namespace etb::test
