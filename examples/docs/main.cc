// SPDX-License-Identifier: Apache-2.0
//
// The code blocks of docs/*.md that are not the checkout example's (the
// other files here, one per page), compiled and linked so every name they
// use exists, but not run: each is a part of a program, with a dependency
// to talk to. scripts/check-doc-examples keeps each page's copy equal.
int main() { return 0; }
