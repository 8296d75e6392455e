// SPDX-License-Identifier: Apache-2.0
#include "outbound/http/settings.h"

#include <gtest/gtest.h>

#include "outbound/http/client.h"

namespace outbound::http {
namespace {

using std::chrono::seconds;

TEST(SettingsTest, DefaultsAreTheDocumentedOnes) {
  Settings s = DefaultSettings();
  EXPECT_EQ(s.timeout, seconds(10));
  EXPECT_EQ(s.attempt_timeout, seconds(5));
  EXPECT_EQ(s.max_attempts, 3);
  EXPECT_EQ(s.backoff_base, std::chrono::milliseconds(100));
  EXPECT_EQ(s.backoff_max, seconds(5));
  EXPECT_EQ(s.retry_budget.max_tokens, 10);
  EXPECT_DOUBLE_EQ(s.retry_budget.token_ratio, 0.1);
  EXPECT_EQ(s.breaker.window, 20);
  EXPECT_EQ(s.breaker.probes, 1);
  EXPECT_EQ(s.breaker.open_for, seconds(10));
  EXPECT_EQ(s.breaker.probe_timeout, seconds(10));
  EXPECT_EQ(s.breaker.initial_open_for, std::chrono::milliseconds(500));
  EXPECT_EQ(s.breaker.calls_per_probe, 50);
  EXPECT_EQ(s.breaker.slow_call, Duration::zero());  // off
  EXPECT_TRUE(s.classify);
  EXPECT_TRUE(s.breaker_policy.trip && s.breaker_policy.probe);
  EXPECT_TRUE(s.base_url.empty());
}

TEST(SettingsTest, DefaultsWithAnHttpBaseUrlPass) {
  Settings s = DefaultSettings();
  s.base_url = "http://metadata:8080";
  EXPECT_TRUE(Validate(s));
}

TEST(CheckBaseUrlTest, AcceptsAbsoluteHttpAndHttpsWithAHostOnly) {
  EXPECT_TRUE(CheckBaseUrl("https://payments:8443"));
  EXPECT_TRUE(CheckBaseUrl("https://payments/v1"));
  EXPECT_TRUE(CheckBaseUrl("http://[::1]:8080"));
  EXPECT_FALSE(CheckBaseUrl(""));
  EXPECT_FALSE(CheckBaseUrl("payments:8443"));
  EXPECT_FALSE(CheckBaseUrl("ftp://payments"));
  EXPECT_FALSE(CheckBaseUrl("https://payments/?q=1"));
  EXPECT_FALSE(CheckBaseUrl("https://payments/#top"));
  auto user = CheckBaseUrl("https://bob:secret@payments");
  ASSERT_FALSE(user);
  EXPECT_EQ(user.error().message().find("base_url"), std::string::npos);  // names no field
  EXPECT_EQ(user.error().message().find("secret"), std::string::npos);    // leaks no password
}

TEST(ChecksTest, AcceptInRangeAndRejectOutOfRange) {
  EXPECT_TRUE(CheckTimeout(seconds(1)));
  EXPECT_FALSE(CheckTimeout(Duration::zero()));
  EXPECT_FALSE(CheckAttemptTimeout(-seconds(1)));
  EXPECT_TRUE(CheckMaxAttempts(1));
  EXPECT_FALSE(CheckMaxAttempts(0));
  EXPECT_FALSE(CheckBackoffBase(Duration::zero()));
  EXPECT_FALSE(CheckBackoffMax(Duration::zero()));
  EXPECT_FALSE(CheckMaxResponseBytes(0));
  EXPECT_FALSE(CheckMaxConnections(0));
  EXPECT_FALSE(CheckTls(TlsSettings{.root_pem = "not a certificate"}));
  EXPECT_FALSE(CheckTls(TlsSettings{.client_cert_pem = "-----BEGIN CERTIFICATE-----"}));
  EXPECT_TRUE(CheckTls(TlsSettings{}));
  EXPECT_TRUE(CheckTls(std::nullopt));
}

TEST(ValidateTest, NamesEveryBadFieldInOneError) {
  Settings s = DefaultSettings();
  s.base_url = "https://payments:8443";
  s.max_attempts = 0;
  s.timeout = Duration::zero();
  s.backoff_base = seconds(2);
  s.backoff_max = seconds(1);
  s.retry_budget.max_tokens = 2;
  s.retry_budget.min_retries_per_second = -1;
  s.breaker.window = 0;
  s.breaker.initial_open_for = Duration::zero();
  s.breaker.calls_per_probe = 0;
  s.breaker.slow_call = -seconds(1);
  s.classify = nullptr;
  s.breaker_policy.probe = nullptr;
  auto result = Validate(s);
  ASSERT_FALSE(result);
  const std::string& m = result.error().message();
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidSettings);
  for (const char* expected :
       {"Settings.tls must be set for an https Settings.base_url",
        "Settings.max_attempts: must be 1 or more", "Settings.timeout: must be positive",
        "Settings.backoff_max must be at least Settings.backoff_base",
        "Settings.retry_budget.max_tokens: must be from 3 to 1000",
        "Settings.retry_budget.min_retries_per_second: must be from 0 (off) to",
        "Settings.breaker.window: must be from 1 to 10000",
        "Settings.breaker.initial_open_for: must be positive",
        "Settings.breaker.calls_per_probe: must be from 1 to 10000",
        "Settings.breaker.slow_call: must be zero (off) or positive",
        "Settings.classify must be set", "Settings.breaker_policy.probe must be set"}) {
    EXPECT_NE(m.find(expected), std::string::npos) << expected << "\nin: " << m;
  }
}

TEST(ValidateTest, TlsForAnHttpBaseUrlIsRefused) {
  Settings s = DefaultSettings();
  s.base_url = "http://payments";
  s.tls = TlsSettings{};
  auto result = Validate(s);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message(), "Settings.tls must be empty for an http Settings.base_url");
}

TEST(ValidateTest, PriorKnowledgeForAnHttpsBaseUrlIsRefused) {
  Settings s = DefaultSettings();
  s.base_url = "https://payments";
  s.tls = TlsSettings{};
  s.http2_prior_knowledge = true;
  auto result = Validate(s);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message(),
            "Settings.http2_prior_knowledge is for an http Settings.base_url: over https, ALPN "
            "chooses HTTP/2");
}

TEST(ClientCreateTest, RunsEveryCheck) {
  Settings s = DefaultSettings();
  s.max_attempts = 0;
  auto client = Client::Create(Runtime{}, s);
  ASSERT_FALSE(client);
  EXPECT_NE(client.error().message().find("Settings.base_url: must be set"), std::string::npos);
  EXPECT_NE(client.error().message().find("Settings.max_attempts"), std::string::npos);
}

}  // namespace
}  // namespace outbound::http
