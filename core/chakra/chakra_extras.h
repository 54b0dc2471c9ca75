// SPDX-License-Identifier: MIT
//
// What the Chakra schema has no field for, carried in string attrs as JSON so
// that Trace -> .et -> Trace keeps it: a node's full CommInfo (etb_comm) and
// the trace's rank, process groups, iterations and kernels (etb_trace).
#pragma once

#include <string>

#include "core/model/trace.h"

namespace etb::trace::chakra {

std::string commToJson(const Trace& trace, const CommInfo& comm);
// False when the text is not what commToJson writes.
bool commFromJson(Trace& trace, const std::string& text, CommInfo* comm);

std::string traceExtrasToJson(const Trace& trace);
bool traceExtrasFromJson(const std::string& text, Trace* trace);

// Process groups from the `## process_group:init ##` JSON string (a list of
// {pg_name, pg_desc, backend_config, ranks, group_size, ...}); false when it
// does not parse.
bool parsePgConfig(const std::string& text, std::vector<ProcessGroup>* out);

}  // namespace etb::trace::chakra
