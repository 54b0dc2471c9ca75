// SPDX-License-Identifier: MIT
//
// --load-library: an operator library registers its ops with the dispatcher
// (torchvision's _C.so from Debian's python3-torchvision, built against the
// same libtorch), and a path that cannot be loaded is an input error.
#include "replayer/op_libraries.h"

#include <gtest/gtest.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <filesystem>

#include "core/base/error.h"

namespace etb::replay {
namespace {
namespace fs = std::filesystem;

std::string torchvisionLibrary() {
  const fs::path dir = "/usr/lib/python3/dist-packages/torchvision";
  if (!fs::is_directory(dir)) return "";
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("_C.", 0) == 0 && name.size() > 3 && name.substr(name.size() - 3) == ".so") {
      return e.path().string();
    }
  }
  return "";
}

TEST(OpLibraries, TorchvisionOpsResolveOnceTheirLibraryIsLoaded) {
  const std::string lib = torchvisionLibrary();
  if (lib.empty()) GTEST_SKIP() << "python3-torchvision is not installed";
  loadOpLibraries({lib});
  EXPECT_TRUE(c10::Dispatcher::singleton().findSchema({"torchvision::nms", ""}).has_value());
  EXPECT_TRUE(c10::Dispatcher::singleton().findSchema({"torchvision::roi_align", ""}).has_value());
}

TEST(OpLibraries, UnloadablePathIsAnInputErrorNamingIt) {
  try {
    loadOpLibraries({"/nonexistent/libops.so"});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().file, "/nonexistent/libops.so");
    EXPECT_NE(std::string(e.what()).find("cannot load"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace etb::replay
