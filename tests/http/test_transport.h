// SPDX-License-Identifier: Apache-2.0
// Which transport a test binary runs its clients on: the default, native
// transport, or libcurl. ctest runs each client suite twice, the second time
// with OUTBOUND_TEST_TRANSPORT=curl in its environment and a `curl.` prefix
// on its names (tests/CMakeLists.txt, outbound_curl_test), so both transports
// pass the same tests from one build of them. A binary built with
// OUTBOUND_TEST_CURL is on libcurl whatever its environment (the ambient
// test, whose main sets the environment itself).
#ifndef OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_
#define OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "outbound/http/settings.h"

namespace outbound::http {

inline Transport TestTransport() {
#ifdef OUTBOUND_TEST_CURL
  return Transport::kCurl;
#else
  static const Transport transport = [] {
    const char* name = std::getenv("OUTBOUND_TEST_TRANSPORT");  // NOLINT(concurrency-mt-unsafe)
    if (name == nullptr || std::string_view(name) == "native") return Transport::kNative;
    if (std::string_view(name) == "curl") return Transport::kCurl;
    // A misspelt transport must not pass as the native one.
    std::fprintf(stderr, "OUTBOUND_TEST_TRANSPORT=%s: expected curl or native\n", name);
    std::abort();
  }();
  return transport;
#endif
}

}  // namespace outbound::http

#endif  // OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_
