// SPDX-License-Identifier: MIT
#include "core/chakra_writer.h"

// TODO(stub): being written.
