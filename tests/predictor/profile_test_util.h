// SPDX-License-Identifier: MIT
//
// Shared by the predictor's tests: a profile that must not be read back.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"
#include "predictor/hw_profile.h"

namespace etb::predict {

// Writing `hw` and reading it back is refused with an InputError naming the
// file and `field`.
inline void expectRefusedNaming(const HwProfile& hw, const std::string& field) {
  try {
    profileFromJson(profileToJson(hw), "bad.json");
    ADD_FAILURE() << "a bad " << field << " was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

}  // namespace etb::predict
