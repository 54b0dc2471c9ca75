// SPDX-License-Identifier: MIT
#include "replayer/op_libraries.h"

#include <dlfcn.h>

#include "core/base/error.h"
#include "core/base/log.h"

namespace etb::replay {

void loadOpLibraries(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    // Lazy binding: a Python extension (torchvision's _C) carries symbols of
    // the interpreter that its operator registrations never call.
    if (dlopen(path.c_str(), RTLD_LAZY | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      ETB_INPUT_ERROR(SourceLoc{path}, "--load-library: cannot load: ",
                      why ? why : "unknown error");
    }
    ETB_LOG(kInfo) << "loaded operator library " << path;
  }
}

}  // namespace etb::replay
