// SPDX-License-Identifier: MIT
//
// The fixed text of a generated folder (CMakeLists.txt, main.cc, README),
// with @NAME@-style fields filled by emit_project.cc.
#pragma once

#include <map>
#include <string>

namespace etb::gen {

std::string cmakeListsTemplate();
std::string mainTemplate();
std::string readmeTemplate();

// Replaces every @KEY@ by fields.at(KEY).
std::string fillTemplate(std::string text, const std::map<std::string, std::string>& fields);

}  // namespace etb::gen
