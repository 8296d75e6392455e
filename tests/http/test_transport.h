// SPDX-License-Identifier: Apache-2.0
// Which transport a test binary runs its clients on: the default, native
// transport, or libcurl when the binary is built with OUTBOUND_TEST_CURL
// (each client suite is built twice, the second time with the define and a
// `curl.` prefix on its ctest names), so both run the same tests.
#ifndef OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_
#define OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_

#include "outbound/http/settings.h"

namespace outbound::http {

constexpr Transport TestTransport() {
#ifdef OUTBOUND_TEST_CURL
  return Transport::kCurl;
#else
  return Transport::kNative;
#endif
}

}  // namespace outbound::http

#endif  // OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_
