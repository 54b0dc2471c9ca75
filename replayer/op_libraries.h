// SPDX-License-Identifier: MIT
//
// Operator libraries beyond libtorch (torchvision's _C.so for torchvision::
// ops, a model's own custom-op library), loaded as torch.ops.load_library
// does so that their operators register with the dispatcher before the
// replay resolves a trace's ops.
#pragma once

#include <string>
#include <vector>

namespace etb::replay {

// dlopen()s each path (RTLD_GLOBAL); throws InputError naming the path and
// the loader's message when one cannot be loaded.
void loadOpLibraries(const std::vector<std::string>& paths);

}  // namespace etb::replay
