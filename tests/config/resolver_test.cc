// SPDX-License-Identifier: Apache-2.0
#include "outbound/config/resolver.h"

#include <gtest/gtest.h>

#include "../testing/test_support.h"
#include "outbound/config/http_settings.h"
#include "outbound/testing/test_ca.h"

namespace outbound::config {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ParseDurationTest, ReadsGoStyleDurations) {
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("10s"), seconds(10));
  EXPECT_EQ(*ParseDuration("1m30s"), seconds(90));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("2h"), std::chrono::hours(2));
  for (const char* bad : {"", "10", "s", "10 s", "-1s", "10parsecs", "1e3s"}) {
    EXPECT_FALSE(ParseDuration(bad)) << bad;
  }
}

TEST(ResolverTest, AppliesDefaultsWhenUnset) {
  Resolver r(FromMap({}));
  http::Settings d = http::DefaultSettings();
  d.base_url = "http://payments:8080";  // the URL's default is the caller's
  http::Settings s = ReadHttpSettings(r, "OUTBOUND_", d);
  ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
  EXPECT_EQ(s.base_url, "http://payments:8080");
  EXPECT_EQ(s.timeout, seconds(10));
  EXPECT_EQ(s.max_attempts, 3);
  EXPECT_EQ(s.breaker.open_for, seconds(10));
}

TEST(ResolverTest, ReadsEveryVariable) {
  Resolver r(FromMap({{"P_URL", "http://ledger:8080"},
                      {"P_TIMEOUT", "3s"},
                      {"P_ATTEMPT_TIMEOUT", "250ms"},
                      {"P_MAX_ATTEMPTS", "5"},
                      {"P_BACKOFF_BASE", "10ms"},
                      {"P_BACKOFF_MAX", "1s"},
                      {"P_RETRY_BUDGET_MAX_TOKENS", "20"},
                      {"P_RETRY_BUDGET_TOKEN_RATIO", "0.5"},
                      {"P_BREAKER_WINDOW", "50"},
                      {"P_BREAKER_PROBES", "2"},
                      {"P_BREAKER_OPEN_FOR", "30s"},
                      {"P_BREAKER_PROBE_TIMEOUT", "4s"},
                      {"P_BREAKER_INITIAL_OPEN_FOR", "200ms"},
                      {"P_BREAKER_CALLS_PER_PROBE", "100"},
                      {"P_BREAKER_SLOW_CALL", "1s"},

                      {"P_MAX_RESPONSE_BYTES", "1048576"},
                      {"P_MAX_ERROR_RESPONSE_BYTES", "65536"},
                      {"P_MAX_CONNECTIONS", "8"},
                      {"P_RATE_LIMIT", "50/s,10"},
                      {"P_FAULTS", "on"},
                      {"P_GZIP", "on"}}));
  http::Settings s = ReadHttpSettings(r, "P_", http::DefaultSettings());
  ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
  EXPECT_EQ(s.base_url, "http://ledger:8080");
  EXPECT_FALSE(s.tls);
  EXPECT_EQ(s.timeout, seconds(3));
  EXPECT_EQ(s.attempt_timeout, milliseconds(250));
  EXPECT_EQ(s.max_attempts, 5);
  EXPECT_EQ(s.backoff_base, milliseconds(10));
  EXPECT_EQ(s.backoff_max, seconds(1));
  EXPECT_EQ(s.retry_budget.max_tokens, 20);
  EXPECT_DOUBLE_EQ(s.retry_budget.token_ratio, 0.5);
  EXPECT_EQ(s.breaker.window, 50);
  EXPECT_EQ(s.breaker.probes, 2);
  EXPECT_EQ(s.breaker.open_for, seconds(30));
  EXPECT_EQ(s.breaker.probe_timeout, seconds(4));
  EXPECT_EQ(s.breaker.initial_open_for, milliseconds(200));
  EXPECT_EQ(s.breaker.calls_per_probe, 100);
  EXPECT_EQ(s.breaker.slow_call, seconds(1));
  EXPECT_EQ(s.max_response_bytes, 1048576u);
  EXPECT_EQ(s.max_error_response_bytes, 65536u);
  EXPECT_EQ(s.max_connections, 8);
  EXPECT_TRUE(s.gzip);
  ASSERT_TRUE(s.rate_limit);
  EXPECT_DOUBLE_EQ(s.rate_limit->per_second, 50);
  EXPECT_EQ(s.rate_limit->burst, 10);
  EXPECT_TRUE(s.faults.enabled);
  EXPECT_TRUE(http::Validate(s)) << http::Validate(s).error().message();
}

TEST(ResolverTest, EveryNameItReadsIsListed) {
  std::map<std::string, std::string> seen;
  Resolver r([&](const std::string& name) -> std::optional<std::string> {
    seen[name] = "";
    return std::nullopt;
  });
  http::Settings d = http::DefaultSettings();
  d.base_url = "https://payments:8443";
  (void)ReadHttpSettings(r, "PAYMENTS_", d);
  std::vector<std::string> listed = HttpSettingsVariables("PAYMENTS_");
  std::vector<std::string> read;
  for (const auto& [name, value] : seen) read.push_back(name);
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(read, listed);
  EXPECT_EQ(listed.size(), 25u);
}

TEST(ResolverTest, TheBaseUrlInOneVariable) {
  testing::TempDir dir;
  testing::TestCA ca;
  std::string cafile = dir.Write("ca.pem", ca.pem());
  Resolver r(FromMap({{"PAYMENTS_URL", "https://payments:8443"}, {"PAYMENTS_CA_FILE", cafile}}));
  http::Settings s = ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
  EXPECT_EQ(s.base_url, "https://payments:8443");
  ASSERT_TRUE(s.tls);
  EXPECT_EQ(s.tls->root_pem, ca.pem());
  EXPECT_TRUE(http::Validate(s));

  Resolver bad(
      FromMap({{"PAYMENTS_URL", "ftp://payments"}, {"PAYMENTS_MAX_RESPONSE_BYTES", "-1"}}));
  (void)ReadHttpSettings(bad, "PAYMENTS_", http::DefaultSettings());
  auto done = bad.Finish();
  ASSERT_FALSE(done);
  EXPECT_NE(done.error().message().find("PAYMENTS_URL: "), std::string::npos);
  EXPECT_NE(
      done.error().message().find("PAYMENTS_MAX_RESPONSE_BYTES: \"-1\" is not a whole number"),
      std::string::npos)
      << done.error().message();
}

TEST(ResolverTest, AFileThatIsNotPemIsNamedByItsPath) {
  testing::TempDir dir;
  testing::TestCA ca;
  std::string der = dir.Write("ca.der", "0\x82\x01");
  std::string key = dir.Write("key.pem", ca.IssueClient("c").key_pem);
  std::string cert = dir.Write("cert.pem", ca.IssueClient("c").cert_pem);
  Resolver r(FromMap({{"P_URL", "https://payments:8443"},
                      {"P_CA_FILE", der},
                      {"P_CERT_FILE", key},
                      {"P_KEY_FILE", cert}}));
  (void)ReadHttpSettings(r, "P_", http::DefaultSettings());
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(), "P_CA_FILE: \"" + der +
                                        "\" is not PEM (no -----BEGIN line); P_CERT_FILE: \"" +
                                        key + "\" holds no PEM certificate; P_KEY_FILE: \"" + cert +
                                        "\" holds no PEM private key");
}

TEST(ResolverTest, ReportsEveryBadVariableTogetherByName) {
  Resolver r(FromMap({{"OUTBOUND_TIMEOUT", "soon"},
                      {"OUTBOUND_MAX_ATTEMPTS", "0"},
                      {"OUTBOUND_RETRY_BUDGET_MAX_TOKENS", "2"},
                      {"OUTBOUND_BREAKER_OPEN_FOR", "0s"},
                      {"OUTBOUND_BREAKER_CALLS_PER_PROBE", "0"}}));
  http::Settings d = http::DefaultSettings();
  d.base_url = "http://payments:8080";
  (void)ReadHttpSettings(r, "OUTBOUND_", d);
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "OUTBOUND_TIMEOUT: \"soon\" is not a duration such as 250ms, 10s or 1m30s; "
            "OUTBOUND_MAX_ATTEMPTS: must be 1 or more; "
            "OUTBOUND_RETRY_BUDGET_MAX_TOKENS: must be from 3 to 1000, not 2; "
            "OUTBOUND_BREAKER_OPEN_FOR: must be positive; "
            "OUTBOUND_BREAKER_CALLS_PER_PROBE: must be from 1 to 10000, not 0");
}

// The choice of transport went with libcurl: a variable that still names
// one is refused, not ignored, whatever it says.
TEST(ResolverTest, ATransportVariableIsRefusedNowThatThereIsOne) {
  for (const char* value : {"curl", "native"}) {
    Resolver r(FromMap({{"PAYMENTS_URL", "https://payments:8443"}, {"PAYMENTS_TRANSPORT", value}}));
    (void)ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
    auto done = r.Finish();
    ASSERT_FALSE(done) << value;
    EXPECT_EQ(done.error().message(),
              "PAYMENTS_TRANSPORT: the library has one transport now (libcurl was removed); "
              "unset it")
        << value;
  }
}

TEST(ResolverTest, ARateLimitIsARateAndABurstOrOff) {
  http::Settings d = http::DefaultSettings();
  d.base_url = "http://payments:8080";
  d.rate_limit = http::WithRateLimit(5);
  {
    Resolver r(FromMap({{"P_RATE_LIMIT", "2.5/s"}}));
    http::Settings s = ReadHttpSettings(r, "P_", d);
    ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
    ASSERT_TRUE(s.rate_limit);
    EXPECT_DOUBLE_EQ(s.rate_limit->per_second, 2.5);
    EXPECT_EQ(s.rate_limit->burst, 1);
  }
  {
    Resolver r(FromMap({{"P_RATE_LIMIT", "off"}, {"P_FAULTS", "off"}}));
    http::Settings s = ReadHttpSettings(r, "P_", d);
    ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
    EXPECT_FALSE(s.rate_limit);
    EXPECT_FALSE(s.faults.enabled);
  }
  for (const char* bad : {"50", "/s", "50/m", "50/s,", "50/s,x", "0/s", "-1/s", "50/s,0"}) {
    Resolver r(FromMap({{"P_RATE_LIMIT", bad}, {"P_FAULTS", "yes"}}));
    (void)ReadHttpSettings(r, "P_", d);
    auto done = r.Finish();
    ASSERT_FALSE(done) << bad;
    EXPECT_NE(done.error().message().find("P_RATE_LIMIT: "), std::string::npos) << bad;
    EXPECT_NE(done.error().message().find("P_FAULTS: must be on or off"), std::string::npos);
  }
}

TEST(ResolverTest, RequiredVariableMustBeSetAndFilesMustExist) {
  Resolver r(FromMap({{"OUTBOUND_CA_FILE", "/nonexistent/ca.pem"}}));
  (void)ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
  http::Settings d = http::DefaultSettings();
  d.base_url = "https://payments:8443";
  (void)ReadHttpSettings(r, "OUTBOUND_", d);
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_NE(done.error().message().find("PAYMENTS_URL: must be set"), std::string::npos);
  EXPECT_NE(done.error().message().find("OUTBOUND_CA_FILE: cannot read \"/nonexistent/ca.pem\""),
            std::string::npos);
}

TEST(ResolverTest, HttpsWithoutCaFileTrustsTheSystemRoots) {
  Resolver r(FromMap({}));
  http::Settings d = http::DefaultSettings();
  d.base_url = "https://example.com";
  http::Settings s = ReadHttpSettings(r, "OUTBOUND_", d);
  ASSERT_TRUE(r.Finish());
  ASSERT_TRUE(s.tls);
  EXPECT_TRUE(s.tls->root_pem.empty());
  EXPECT_TRUE(http::Validate(s));
}

}  // namespace
}  // namespace outbound::config
