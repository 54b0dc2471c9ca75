// SPDX-License-Identifier: MIT
//
// The subset of JSON Schema the recipe schema uses: type, properties,
// required, additionalProperties (false or a schema), items, enum, minimum,
// minItems, minProperties, maxProperties, pattern and $ref to #/$defs/...
// Written here because Debian ships no C++ JSON-schema validator.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace etb::compose {

// "" when `value` satisfies `schema`, else the first violation as
// "<json pointer>: <what>", e.g. "/steps/1/repeat: must be >= 1, got 0".
std::string validateJson(const nlohmann::json& value, const nlohmann::json& schema);

}  // namespace etb::compose
