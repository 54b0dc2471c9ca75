// SPDX-License-Identifier: MIT
#include "core/chakra_reader.h"

// TODO(stub): being written.
