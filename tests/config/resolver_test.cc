#include "outbound/config/resolver.h"

#include <gtest/gtest.h>

#include "outbound/config/http_settings.h"

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
  http::Settings s = ReadHttpSettings(r, "OUTBOUND_", http::DefaultSettings());
  ASSERT_TRUE(r.Finish());
  EXPECT_EQ(s.timeout, seconds(10));
  EXPECT_EQ(s.max_attempts, 3);
  EXPECT_EQ(s.breaker.open_for, seconds(10));
}

TEST(ResolverTest, ReadsEveryVariable) {
  Resolver r(FromMap({{"P_TIMEOUT", "3s"},
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
                      {"P_BREAKER_SLOW_CALL", "1s"}}));
  http::Settings s = ReadHttpSettings(r, "P_", http::DefaultSettings());
  ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
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
}

TEST(ResolverTest, ReportsEveryBadVariableTogetherByName) {
  Resolver r(FromMap({{"OUTBOUND_TIMEOUT", "soon"},
                      {"OUTBOUND_MAX_ATTEMPTS", "0"},
                      {"OUTBOUND_RETRY_BUDGET_MAX_TOKENS", "2"},
                      {"OUTBOUND_BREAKER_OPEN_FOR", "0s"},
                      {"OUTBOUND_BREAKER_CALLS_PER_PROBE", "0"}}));
  (void)ReadHttpSettings(r, "OUTBOUND_", http::DefaultSettings());
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "OUTBOUND_TIMEOUT: \"soon\" is not a duration such as 250ms, 10s or 1m30s; "
            "OUTBOUND_MAX_ATTEMPTS: must be 1 or more; "
            "OUTBOUND_RETRY_BUDGET_MAX_TOKENS: must be from 3 to 1000, not 2; "
            "OUTBOUND_BREAKER_OPEN_FOR: must be positive; "
            "OUTBOUND_BREAKER_CALLS_PER_PROBE: must be from 1 to 10000, not 0");
}

TEST(ResolverTest, RequiredVariableMustBeSetAndFilesMustExist) {
  Resolver r(FromMap({{"OUTBOUND_CA_FILE", "/nonexistent/ca.pem"}}));
  Parser<std::string> text = [](const std::string& s) -> Result<std::string> { return s; };
  (void)r.Get<std::string>("PAYMENTS_URL", text, std::nullopt);
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
