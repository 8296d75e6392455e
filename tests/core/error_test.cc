// SPDX-License-Identifier: Apache-2.0
#include "outbound/error.h"

#include <gtest/gtest.h>

namespace outbound {
namespace {

TEST(ErrorTest, CarriesKindMessageAttemptsAndRetryAfter) {
  Error error(ErrorKind::kRejected, "circuit breaker is open");
  error.set_attempts(2).set_retry_after(std::chrono::seconds(3));
  EXPECT_EQ(error.kind(), ErrorKind::kRejected);
  EXPECT_EQ(error.message(), "circuit breaker is open");
  EXPECT_EQ(error.attempts(), 2);
  EXPECT_EQ(error.retry_after(), std::chrono::seconds(3));
}

TEST(ErrorTest, RetryAfterIsEmptyUnlessSet) {
  EXPECT_FALSE(Error(ErrorKind::kDeadline, "x").retry_after().has_value());
}

TEST(ErrorTest, KindsHaveDistinctNames) {
  EXPECT_EQ(ToString(ErrorKind::kTlsUntrusted), "tls_untrusted");
  EXPECT_EQ(ToString(ErrorKind::kOriginRefused), "origin_refused");
  EXPECT_EQ(ToString(ErrorKind::kResponseTooLarge), "response_too_large");
}

TEST(ResultTest, HoldsValueOrError) {
  Result<int> ok = 7;
  Result<int> bad = Fail(ErrorKind::kTransport, "connection refused");
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 7);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::kTransport);
}

}  // namespace
}  // namespace outbound
