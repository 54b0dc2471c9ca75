// SPDX-License-Identifier: MIT
//
// Attribute names shared by the Chakra reader and writer. Names starting with
// "etb_" are ours: consumers (ASTRA-sim, Chakra's tools) ignore unknown attrs,
// and our reader uses them to give back exactly the Trace that was written.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

#include "core/model/trace.h"

namespace etb::trace::chakra {

constexpr const char* kEtbTrace = "etb_trace";            // metadata: JSON extras
constexpr const char* kEtbSchedDeps = "etb_sched_deps";   // metadata: data_deps synthesized
constexpr const char* kEtbKind = "etb_kind";              // NodeKind name
constexpr const char* kEtbSynth = "etb_synth";            // attrs the writer added
constexpr const char* kEtbComm = "etb_comm";              // CommInfo JSON
constexpr const char* kEtbParent = "etb_parent";          // parent not expressible as ctrl_dep
constexpr const char* kEtbDataDeps = "etb_data_deps";     // explicit deps under sched deps
constexpr const char* kEtbDur = "etb_dur_us";
constexpr const char* kEtbStart = "etb_start_us";
constexpr const char* kEtbGpuDur = "etb_gpu_dur_us";
// A recorded attr whose consumer form differs (chakra_node_attrs.h).
constexpr const char* kEtbOrigPrefix = "etb_orig:";
// A GPU kernel node written from Trace::kernels (those ride in etb_trace);
// our reader skips such nodes.
constexpr const char* kEtbKernelNode = "etb_kernel_node";
// The recorded Chakra node type when the writer wrote another one.
constexpr const char* kEtbOrigType = "etb_orig_type";
constexpr const char* kEtbStrides[2] = {"etb_inputs_strides", "etb_outputs_strides"};
constexpr const char* kEtbTree[2] = {"etb_inputs_tree", "etb_outputs_tree"};
// Extra ctrl_deps beyond the first (the parent), kept as a node attr.
constexpr const char* kCtrlDepsExtra = "ctrl_deps_extra";
// IOInfo strings that did not parse, kept verbatim.
constexpr const char* kRawIo[2][3] = {{"inputs.values", "inputs.shapes", "inputs.types"},
                                      {"outputs.values", "outputs.shapes", "outputs.types"}};
// In etb_synth: the node type was derived, Node::chakra_type was unset.
constexpr const char* kSynthType = "@type";

inline std::unordered_set<std::string> splitNames(std::string_view s) {
  std::unordered_set<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.emplace(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

inline NodeKind parseNodeKind(std::string_view name, NodeKind fallback) {
  for (int k = 0; k <= static_cast<int>(NodeKind::kMemory); ++k) {
    if (nodeKindName(static_cast<NodeKind>(k)) == name) return static_cast<NodeKind>(k);
  }
  return fallback;
}

}  // namespace etb::trace::chakra
