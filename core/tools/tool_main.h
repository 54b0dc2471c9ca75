// SPDX-License-Identifier: MIT
//
// The error-to-exit-code mapping every *_main.cc shares: bad input (a trace,
// a flag) exits 2, anything else 1, both as "<tool>: error: <message>".
#pragma once

#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/base/error.h"

namespace etb {

// Parses `argc/argv` with `app`, then runs `body`. Returns the exit code.
template <typename Body>
int runTool(CLI::App& app, int argc, char** argv, Body body) {
  const std::string tool = app.get_name();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // a bad flag is bad input
  }
  try {
    return body();
  } catch (const InputError& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace etb
