// SPDX-License-Identifier: MIT
//
// Dependency-graph checks shared by the Chakra reader and writer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::trace::chakra {

// `ids` sorted ascending and unique; deps[i] = ids node i waits for (each
// present in `ids`, none equal to ids[i]). Returns a node on a cycle, if any.
std::optional<NodeId> findCycle(const std::vector<NodeId>& ids,
                                const std::vector<std::vector<NodeId>>& deps);

// Strongly connected components of the same graph (iterative Tarjan, so deep
// graphs cannot overflow the stack): comp[i] is node i's component, and
// components of one node without a self-edge have size 1.
std::vector<uint32_t> components(const std::vector<NodeId>& ids,
                                 const std::vector<std::vector<NodeId>>& deps,
                                 std::vector<uint32_t>* sizes);

// "name.<rank>.et" / "name.<rank>.et.gz" -> rank; -1 when absent.
int64_t rankFromPath(const std::string& path);

// Chakra CollectiveCommType <-> etb CommType (-1 when it has no Chakra form).
CommType commTypeFromChakra(int64_t value);
int64_t chakraCommType(CommType type);

}  // namespace etb::trace::chakra
