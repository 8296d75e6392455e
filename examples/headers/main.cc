// SPDX-License-Identifier: Apache-2.0
//
// The public headers' usage examples (the other files here) are compiled
// and linked, so every name they use exists, but not run: most are parts of
// a program, or of a test, with a dependency to talk to.
int main() { return 0; }
