// SPDX-License-Identifier: MIT
#pragma once
// TODO(stub): being written.
