// SPDX-License-Identifier: MIT
#include "core/kineto_linker.h"

// TODO(stub): being written.
