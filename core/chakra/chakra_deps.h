// SPDX-License-Identifier: MIT
//
// The Chakra reader's last step: sort by id, reject duplicates and data-dep
// cycles, repair dangling/self dependencies and ctrl-dep cycles, load process
// groups, finalize.
#pragma once

#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::trace::chakra {

// What the reader saw of one node's dependencies, parallel to trace.nodes.
struct NodeDeps {
  std::vector<NodeId> ctrl;     // ctrl_deps as written (first = parent)
  bool has_etb_parent = false;  // parent came from etb_parent: trusted as is
};

void resolveDeps(Trace& t, std::vector<NodeDeps>& deps, const std::string& file, bool strict);

}  // namespace etb::trace::chakra
