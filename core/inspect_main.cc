// SPDX-License-Identifier: MIT
// TODO(stub): being written.
int main() { return 0; }
