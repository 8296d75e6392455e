// SPDX-License-Identifier: Apache-2.0
// The translation unit that builds the test binaries' precompiled header
// (outbound_test_pch in CMakeLists.txt); it has nothing of its own.
