// Which transport a test binary runs its clients on: libcurl, or the
// native transport when the binary is built with OUTBOUND_TEST_NATIVE (each
// client suite is built twice, the second time with the define and a
// `native.` prefix on its ctest names), so both run the same tests.
#ifndef OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_
#define OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_

#include "outbound/http/settings.h"

namespace outbound::http {

constexpr Transport TestTransport() {
#ifdef OUTBOUND_TEST_NATIVE
  return Transport::kNative;
#else
  return Transport::kCurl;
#endif
}

}  // namespace outbound::http

#endif  // OUTBOUND_TESTS_HTTP_TEST_TRANSPORT_H_
