// SPDX-License-Identifier: Apache-2.0
#include "outbound/rpc/settings.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include "echo.pb.h"
#include "outbound/rpc/proto.h"

namespace outbound::rpc {
namespace {

using ::testing::HasSubstr;

TEST(RpcSettings, DefaultsAreSeed001s) {
  Settings s = DefaultSettings();
  EXPECT_EQ(s.addr, "");
  EXPECT_FALSE(s.tls.has_value());
  EXPECT_EQ(s.timeout, std::chrono::seconds(10));
  EXPECT_EQ(s.max_attempts, 3);
  EXPECT_EQ(s.backoff_base, std::chrono::milliseconds(100));
  EXPECT_EQ(s.backoff_max, std::chrono::seconds(5));
  EXPECT_EQ(s.retry_budget.max_tokens, 10);
  EXPECT_DOUBLE_EQ(s.retry_budget.token_ratio, 0.1);
  EXPECT_EQ(s.breaker.window, 20);
  EXPECT_TRUE(s.classify);
  EXPECT_TRUE(s.breaker_policy.trip);
}

TEST(RpcSettings, CheckAddr) {
  EXPECT_TRUE(CheckAddr("carts:9090"));
  EXPECT_TRUE(CheckAddr("10.0.0.1:1"));
  EXPECT_TRUE(CheckAddr("[::1]:65535"));
  EXPECT_FALSE(CheckAddr(""));
  EXPECT_FALSE(CheckAddr("carts"));
  EXPECT_FALSE(CheckAddr("carts:0"));
  EXPECT_FALSE(CheckAddr("carts:65536"));
  EXPECT_FALSE(CheckAddr("carts:http"));
  EXPECT_FALSE(CheckAddr(":9090"));
  EXPECT_FALSE(CheckAddr("dns:///carts:9090"));
  EXPECT_FALSE(CheckAddr("::1:9090"));
  EXPECT_FALSE(CheckAddr("car ts:9090"));
}

TEST(RpcSettings, CheckTls) {
  EXPECT_TRUE(CheckTls(std::nullopt));
  EXPECT_TRUE(CheckTls(TlsSettings{}));  // system roots
  EXPECT_FALSE(CheckTls(TlsSettings{"not a pem", "", ""}));
  EXPECT_FALSE(CheckTls(TlsSettings{"", "-----BEGIN CERTIFICATE-----", ""}));
}

TEST(RpcSettings, ValidateNamesEveryBadField) {
  Settings s = DefaultSettings();
  s.timeout = Duration::zero();
  s.max_attempts = 0;
  s.backoff_base = std::chrono::seconds(2);
  s.backoff_max = std::chrono::seconds(1);
  s.retry_budget.max_tokens = 0;
  s.retry_budget.min_retries_per_second = 1e9;
  s.breaker.window = 0;
  s.classify = nullptr;
  auto result = Validate(s);
  ASSERT_FALSE(result);
  const std::string& m = result.error().message();
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidSettings);
  EXPECT_THAT(m, HasSubstr("Settings.addr: must be set"));
  EXPECT_THAT(m, HasSubstr("Settings.timeout: must be positive"));
  EXPECT_THAT(m, HasSubstr("Settings.max_attempts"));
  EXPECT_THAT(m, HasSubstr("Settings.backoff_max must be at least Settings.backoff_base"));
  EXPECT_THAT(m, HasSubstr("Settings.retry_budget.max_tokens"));
  EXPECT_THAT(m, HasSubstr("Settings.retry_budget.min_retries_per_second"));
  EXPECT_THAT(m, HasSubstr("Settings.breaker.window"));
  EXPECT_THAT(m, HasSubstr("Settings.classify must be set"));
  s = DefaultSettings();
  s.addr = "carts:9090";
  EXPECT_TRUE(Validate(s));
  // A hedge is an attempt: with one attempt in all, none is ever sent.
  s.hedging = http::Hedging{};
  EXPECT_TRUE(Validate(s));
  s.max_attempts = 1;
  result = Validate(s);
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error().message(), HasSubstr("Settings.hedging: max_attempts is 1"));
  // Unless a method's policy raises it: that method's calls hedge.
  s.methods = {{.method = "/carts.v1.Carts/Get", .max_attempts = 3}};
  EXPECT_TRUE(Validate(s));
}

TEST(RpcSettings, Pushback) {
  EXPECT_EQ(Pushback({}), std::nullopt);
  EXPECT_EQ(Pushback({{"grpc-retry-pushback-ms", "2000"}}), std::chrono::milliseconds(2000));
  EXPECT_EQ(Pushback({{"grpc-retry-pushback-ms", "0"}}), Duration::zero());
  EXPECT_LT(*Pushback({{"grpc-retry-pushback-ms", "-1"}}), Duration::zero());
  EXPECT_LT(*Pushback({{"grpc-retry-pushback-ms", "soon"}}), Duration::zero());
  EXPECT_LT(*Pushback({{"grpc-retry-pushback-ms", ""}}), Duration::zero());
  EXPECT_LT(*Pushback({{"grpc-retry-pushback-ms", "12x"}}), Duration::zero());
}

Classification Default(Code code, Trailers trailers = {}) {
  return DefaultClassify("/pkg.Svc/M", Status{code, ""}, trailers);
}

TEST(RpcSettings, DefaultClassifyIsRevision1sTable) {
  using R = retry::Outcome;
  using B = circuit::Outcome;
  auto expect = [](Classification c, R r, B b) {
    EXPECT_EQ(c.retry, r);
    EXPECT_EQ(c.breaker, b);
  };
  expect(Default(Code::kOk), R::kSuccess, B::kSuccess);
  expect(Default(Code::kUnavailable), R::kRetry, B::kFailure);
  expect(Default(Code::kResourceExhausted), R::kStop, B::kFailure);
  expect(Default(Code::kResourceExhausted, {{"grpc-retry-pushback-ms", "0"}}), R::kRetry,
         B::kFailure);
  for (Code c : {Code::kDeadlineExceeded, Code::kInternal, Code::kUnknown, Code::kDataLoss}) {
    expect(Default(c), R::kStop, B::kFailure);
  }
  expect(Default(Code::kCancelled), R::kStop, B::kIgnored);
  for (Code c : {Code::kNotFound, Code::kInvalidArgument, Code::kAborted}) {
    expect(Default(c), R::kStop, B::kSuccess);
  }
  // The pushback is the least wait; a negative or malformed one stops.
  EXPECT_EQ(Default(Code::kUnavailable, {{"grpc-retry-pushback-ms", "250"}}).retry_after,
            std::chrono::milliseconds(250));
  expect(Default(Code::kUnavailable, {{"grpc-retry-pushback-ms", "-1"}}), R::kStop, B::kFailure);
  expect(Default(Code::kResourceExhausted, {{"grpc-retry-pushback-ms", "x"}}), R::kStop,
         B::kFailure);
}

// tests/rpc/echo.proto marks Say NO_SIDE_EFFECTS and Count IDEMPOTENT;
// Collect and Chat say nothing, so they must not be sent twice.
TEST(NonIdempotentMethods, NamesEveryMethodTheProtoDoesNotMarkSafe) {
  const auto* echo = outbound::test::EchoRequest::descriptor()->file()->FindServiceByName("Echo");
  ASSERT_NE(echo, nullptr);
  EXPECT_THAT(NonIdempotentMethods(*echo),
              ::testing::ElementsAre("/outbound.test.Echo/Collect", "/outbound.test.Echo/Chat"));
  Settings settings = DefaultSettings();
  settings.addr = "backend:9090";
  settings.non_idempotent_methods = NonIdempotentMethods(*echo);
  EXPECT_TRUE(Validate(settings)) << "every name it gives is a valid method name";
}

}  // namespace
}  // namespace outbound::rpc
