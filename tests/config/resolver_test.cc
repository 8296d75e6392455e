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
  for (const char* bad :
       {"", "10", "s", "10 s", "-1s", "10parsecs", "1e3s", "1..5s", "1.2.3s", ".s"}) {
    EXPECT_FALSE(ParseDuration(bad)) << bad;
  }
}

// Numbers are read whole, or not at all: nothing after them, no space.
TEST(ParseNumberTest, ReadsTheWholeTextOrFails) {
  EXPECT_EQ(*ParseInt("3"), 3);
  EXPECT_EQ(*ParseInt("-3"), -3);
  for (const char* bad : {"", "3x", " 3", "3 ", "99999999999"}) EXPECT_FALSE(ParseInt(bad)) << bad;
  EXPECT_EQ(*ParseDouble("0.5"), 0.5);
  for (const char* bad : {"", "0.5x", "nan", "inf", "1..5"}) EXPECT_FALSE(ParseDouble(bad)) << bad;
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
                      {"P_RETRY_BUDGET_MIN_PER_SECOND", "2.5"},
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
                      {"P_GZIP", "on"},
                      {"P_MAX_CONNECTION_AGE", "30m"}}));
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
  EXPECT_DOUBLE_EQ(s.retry_budget.min_retries_per_second, 2.5);
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
  EXPECT_EQ(s.max_connection_age, std::chrono::minutes(30));
  EXPECT_TRUE(http::Validate(s)) << http::Validate(s).error().message();
}

// MAX_CONNECTION_AGE: a duration or "off" (over a default that has one);
// anything else, or no time at all, is named.
TEST(ResolverTest, MaxConnectionAgeIsADurationOrOff) {
  http::Settings d = http::DefaultSettings();
  d.base_url = "http://payments:8080";
  EXPECT_FALSE(d.max_connection_age);
  Resolver unset(FromMap({}));
  EXPECT_FALSE(ReadHttpSettings(unset, "P_", d).max_connection_age);

  d.max_connection_age = std::chrono::hours(1);
  Resolver off(FromMap({{"P_MAX_CONNECTION_AGE", "off"}}));
  EXPECT_FALSE(ReadHttpSettings(off, "P_", d).max_connection_age);
  ASSERT_TRUE(off.Finish()) << off.Finish().error().message();

  for (auto [text, failure] :
       {std::pair{"soon",
                  "P_MAX_CONNECTION_AGE: \"soon\" is not a duration such as 30m or 1h, or off"},
        std::pair{"0s", "P_MAX_CONNECTION_AGE: must be positive"}}) {
    Resolver bad(FromMap({{"P_MAX_CONNECTION_AGE", text}}));
    (void)ReadHttpSettings(bad, "P_", d);
    auto done = bad.Finish();
    ASSERT_FALSE(done) << text;
    EXPECT_NE(done.error().message().find(failure), std::string::npos) << done.error().message();
  }
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
  EXPECT_EQ(listed.size(), 44u);
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

// The backoff's base over its maximum fails when one of the two alone is
// set and the other is its default, naming the one set; else Client::Create
// would refuse the settings with no variable named.
TEST(ResolverTest, ABackoffBaseOverTheDefaultMaximumIsNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"PAYMENTS_BACKOFF_BASE",
       "PAYMENTS_BACKOFF_BASE: must be at most PAYMENTS_BACKOFF_MAX "
       "(unset: its default)"},
      {"PAYMENTS_BACKOFF_MAX",
       "PAYMENTS_BACKOFF_MAX: must be at least PAYMENTS_BACKOFF_BASE "
       "(unset: its default)"}};
  for (const auto& [variable, expected] : cases) {
    // A base of 10s over the default maximum (5s); a maximum of 1ms under
    // the default base (100ms).
    bool base = std::string_view(variable).ends_with("BASE");
    Resolver r(
        FromMap({{"PAYMENTS_URL", "https://payments:8443"}, {variable, base ? "10s" : "1ms"}}));
    (void)ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
    auto done = r.Finish();
    ASSERT_FALSE(done) << variable;
    EXPECT_EQ(done.error().message(), expected);
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

TEST(ResolverTest, ABulkheadIsReadWithOrWithoutItsQueue) {
  auto read = [](const std::string& text) {
    Resolver r(FromMap({{"PAYMENTS_URL", "http://payments:8080"}, {"PAYMENTS_BULKHEAD", text}}));
    http::Settings s = ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
    auto done = r.Finish();
    return std::make_pair(s.bulkhead, done ? std::string() : done.error().message());
  };
  auto [plain, plain_error] = read("64");
  ASSERT_TRUE(plain) << plain_error;
  EXPECT_EQ(plain->max_calls, 64);
  EXPECT_EQ(plain->max_queued, 0);
  auto [queued, queued_error] = read("64,16,50ms");
  ASSERT_TRUE(queued) << queued_error;
  EXPECT_EQ(queued->max_queued, 16);
  EXPECT_EQ(queued->max_wait, std::chrono::milliseconds(50));
  EXPECT_FALSE(read("off").first);
  EXPECT_EQ(read("64,16").second,
            "PAYMENTS_BULKHEAD: \"64,16\" is not a bulkhead such as 64 (calls in flight) or "
            "64,16,50ms (16 more waiting 50ms at most), or off");
  EXPECT_EQ(read("0").second, "PAYMENTS_BULKHEAD: the calls in flight must be from 1 to 100000");
}

// No variable sets the longest ejection (5 min): a longer base ejection
// raises it, and is not refused by a check no variable could satisfy.
TEST(ResolverTest, ABaseEjectionLongerThanTheDefaultLongestRaisesIt) {
  Resolver long_out(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                             {"PAYMENTS_BALANCING", "on"},
                             {"PAYMENTS_OUTLIER_BASE_EJECTION", "10m"}}));
  http::Settings s = ReadHttpSettings(long_out, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(long_out.Finish()) << long_out.Finish().error().message();
  ASSERT_TRUE(s.balancing);
  EXPECT_EQ(s.balancing->outlier_detection.base_ejection, std::chrono::minutes(10));
  EXPECT_EQ(s.balancing->outlier_detection.max_ejection, std::chrono::minutes(10));
  EXPECT_TRUE(http::Validate(s)) << http::Validate(s).error().message();
}

TEST(ResolverTest, BalancingIsOnWithTheNameOrAListAndItsNumbersOnlyWhenOn) {
  Resolver listed(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                           {"PAYMENTS_ENDPOINTS", "10.0.0.7:8080,[::1]:8081"},
                           {"PAYMENTS_OUTLIER_CONSECUTIVE_FAILURES", "3"},
                           {"PAYMENTS_OUTLIER_BASE_EJECTION", "10s"}}));
  http::Settings s = ReadHttpSettings(listed, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(listed.Finish()) << listed.Finish().error().message();
  ASSERT_TRUE(s.balancing);
  EXPECT_EQ(s.balancing->endpoints, (std::vector<Endpoint>{{"10.0.0.7", 8080}, {"::1", 8081}}));
  EXPECT_EQ(s.balancing->outlier_detection.consecutive_failures, 3);
  EXPECT_EQ(s.balancing->outlier_detection.base_ejection, std::chrono::seconds(10));

  // A space after each comma, as a list is often written.
  Resolver spaced(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                           {"PAYMENTS_ENDPOINTS", "10.0.0.7:8080, [::1]:8081 "}}));
  s = ReadHttpSettings(spaced, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(spaced.Finish()) << spaced.Finish().error().message();
  ASSERT_TRUE(s.balancing);
  EXPECT_EQ(s.balancing->endpoints, (std::vector<Endpoint>{{"10.0.0.7", 8080}, {"::1", 8081}}));

  Resolver named(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                          {"PAYMENTS_BALANCING", "on"},
                          {"PAYMENTS_RE_RESOLVE_EVERY", "5s"}}));
  s = ReadHttpSettings(named, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(named.Finish()) << named.Finish().error().message();
  ASSERT_TRUE(s.balancing);
  EXPECT_TRUE(s.balancing->endpoints.empty());
  EXPECT_EQ(s.balancing->re_resolve_every, std::chrono::seconds(5));

  Resolver unset(FromMap({{"PAYMENTS_URL", "http://payments:8080"}}));
  s = ReadHttpSettings(unset, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(unset.Finish());
  EXPECT_FALSE(s.balancing);

  Resolver off(
      FromMap({{"PAYMENTS_URL", "http://payments:8080"}, {"PAYMENTS_RE_RESOLVE_EVERY", "5s"}}));
  (void)ReadHttpSettings(off, "PAYMENTS_", http::DefaultSettings());
  auto refused = off.Finish();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("PAYMENTS_RE_RESOLVE_EVERY: set, but "
                                           "PAYMENTS_BALANCING is off"),
            std::string::npos)
      << refused.error().message();

  Resolver bad(FromMap(
      {{"PAYMENTS_URL", "http://payments:8080"}, {"PAYMENTS_ENDPOINTS", "payments.internal"}}));
  (void)ReadHttpSettings(bad, "PAYMENTS_", http::DefaultSettings());
  auto malformed = bad.Finish();
  ASSERT_FALSE(malformed);
  EXPECT_NE(malformed.error().message().find(
                "PAYMENTS_ENDPOINTS: \"payments.internal\" is not an address and port"),
            std::string::npos)
      << malformed.error().message();
}

TEST(ResolverTest, AdaptiveConcurrencyIsOnWithItsNumbersOrOffWithNone) {
  Resolver on(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                       {"PAYMENTS_ADAPTIVE_CONCURRENCY", "on"},
                       {"PAYMENTS_ADAPTIVE_CONCURRENCY_INITIAL_LIMIT", "8"},
                       {"PAYMENTS_ADAPTIVE_CONCURRENCY_MIN_LIMIT", "2"},
                       {"PAYMENTS_ADAPTIVE_CONCURRENCY_MAX_LIMIT", "200"},
                       {"PAYMENTS_ADAPTIVE_CONCURRENCY_SAMPLE_WINDOW", "250ms"}}));
  http::Settings s = ReadHttpSettings(on, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(on.Finish()) << on.Finish().error().message();
  ASSERT_TRUE(s.adaptive_concurrency);
  EXPECT_EQ(s.adaptive_concurrency->initial_limit, 8);
  EXPECT_EQ(s.adaptive_concurrency->min_limit, 2);
  EXPECT_EQ(s.adaptive_concurrency->max_limit, 200);
  EXPECT_EQ(s.adaptive_concurrency->sample_window, std::chrono::milliseconds(250));

  Resolver defaults(
      FromMap({{"PAYMENTS_URL", "http://payments:8080"}, {"PAYMENTS_ADAPTIVE_CONCURRENCY", "on"}}));
  s = ReadHttpSettings(defaults, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(defaults.Finish());
  ASSERT_TRUE(s.adaptive_concurrency);
  EXPECT_EQ(s.adaptive_concurrency->initial_limit, 20);

  Resolver unset(FromMap({{"PAYMENTS_URL", "http://payments:8080"}}));
  s = ReadHttpSettings(unset, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(unset.Finish());
  EXPECT_FALSE(s.adaptive_concurrency);

  // A number beside an adaptive concurrency that is off would be ignored.
  Resolver off(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                        {"PAYMENTS_ADAPTIVE_CONCURRENCY_MAX_LIMIT", "50"}}));
  (void)ReadHttpSettings(off, "PAYMENTS_", http::DefaultSettings());
  auto refused = off.Finish();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(),
            "PAYMENTS_ADAPTIVE_CONCURRENCY_MAX_LIMIT: set, but PAYMENTS_ADAPTIVE_CONCURRENCY is "
            "off: set it to on, or unset this");

  Resolver bad(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                        {"PAYMENTS_ADAPTIVE_CONCURRENCY", "on"},
                        {"PAYMENTS_ADAPTIVE_CONCURRENCY_INITIAL_LIMIT", "500"},
                        {"PAYMENTS_ADAPTIVE_CONCURRENCY_MAX_LIMIT", "100"}}));
  (void)ReadHttpSettings(bad, "PAYMENTS_", http::DefaultSettings());
  auto named = bad.Finish();
  ASSERT_FALSE(named);
  EXPECT_NE(named.error().message().find("initial_limit 500 must be from min_limit 1 to "
                                         "max_limit 100"),
            std::string::npos)
      << named.error().message();
  EXPECT_NE(named.error().message().find("PAYMENTS_ADAPTIVE_CONCURRENCY_INITIAL_LIMIT"),
            std::string::npos);
}

TEST(ResolverTest, HedgingIsOnWithItsNumbersOrOffWithNone) {
  Resolver on(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                       {"PAYMENTS_HEDGING", "on"},
                       {"PAYMENTS_HEDGING_DELAY", "40ms"},
                       {"PAYMENTS_HEDGING_PERCENTILE", "0.95"},
                       {"PAYMENTS_HEDGING_MAX_IN_FLIGHT", "3"},
                       {"PAYMENTS_HEDGING_MAX_EXTRA", "0.1"}}));
  http::Settings s = ReadHttpSettings(on, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(on.Finish()) << on.Finish().error().message();
  ASSERT_TRUE(s.hedging);
  EXPECT_EQ(s.hedging->delay, std::chrono::milliseconds(40));
  EXPECT_EQ(s.hedging->percentile, 0.95);
  EXPECT_EQ(s.hedging->max_attempts_in_flight, 3);
  EXPECT_EQ(s.hedging->max_extra_share, 0.1);

  Resolver defaults(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                             {"PAYMENTS_HEDGING", "on"},
                             {"PAYMENTS_HEDGING_PERCENTILE", "off"}}));
  s = ReadHttpSettings(defaults, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(defaults.Finish()) << defaults.Finish().error().message();
  ASSERT_TRUE(s.hedging);
  EXPECT_EQ(s.hedging->delay, std::chrono::milliseconds(100));
  EXPECT_FALSE(s.hedging->percentile);
  EXPECT_EQ(s.hedging->max_attempts_in_flight, 2);

  Resolver unset(FromMap({{"PAYMENTS_URL", "http://payments:8080"}}));
  s = ReadHttpSettings(unset, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(unset.Finish());
  EXPECT_FALSE(s.hedging);

  // A hedge is an attempt: with MAX_ATTEMPTS=1 none could go.
  Resolver single(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                           {"PAYMENTS_HEDGING", "on"},
                           {"PAYMENTS_MAX_ATTEMPTS", "1"}}));
  (void)ReadHttpSettings(single, "PAYMENTS_", http::DefaultSettings());
  ASSERT_FALSE(single.Finish());
  EXPECT_EQ(single.Finish().error().message(),
            "PAYMENTS_HEDGING: on, but PAYMENTS_MAX_ATTEMPTS is 1 and a hedge is an attempt: "
            "raise it, or set HEDGING off");

  // A number beside hedging that is off would be ignored.
  Resolver off(
      FromMap({{"PAYMENTS_URL", "http://payments:8080"}, {"PAYMENTS_HEDGING_DELAY", "40ms"}}));
  (void)ReadHttpSettings(off, "PAYMENTS_", http::DefaultSettings());
  auto refused = off.Finish();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(),
            "PAYMENTS_HEDGING_DELAY: set, but PAYMENTS_HEDGING is off: set it to on, or unset "
            "this");

  Resolver bad(FromMap({{"PAYMENTS_URL", "http://payments:8080"},
                        {"PAYMENTS_HEDGING", "on"},
                        {"PAYMENTS_HEDGING_PERCENTILE", "0.9999"}}));
  (void)ReadHttpSettings(bad, "PAYMENTS_", http::DefaultSettings());
  auto named = bad.Finish();
  ASSERT_FALSE(named);
  EXPECT_NE(named.error().message().find("the percentile must be from 0.5 to 0.999"),
            std::string::npos)
      << named.error().message();
}

TEST(ResolverTest, PriorKnowledgeIsReadForAnHttpUrlAndRefusedBesideAnHttpsOne) {
  Resolver plain(FromMap(
      {{"PAYMENTS_URL", "http://payments:8080"}, {"PAYMENTS_HTTP2_PRIOR_KNOWLEDGE", "on"}}));
  http::Settings s = ReadHttpSettings(plain, "PAYMENTS_", http::DefaultSettings());
  ASSERT_TRUE(plain.Finish());
  EXPECT_TRUE(s.http2_prior_knowledge);
  EXPECT_TRUE(http::Validate(s)) << http::Validate(s).error().message();

  Resolver tls(FromMap(
      {{"PAYMENTS_URL", "https://payments:8443"}, {"PAYMENTS_HTTP2_PRIOR_KNOWLEDGE", "on"}}));
  (void)ReadHttpSettings(tls, "PAYMENTS_", http::DefaultSettings());
  auto done = tls.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "PAYMENTS_HTTP2_PRIOR_KNOWLEDGE: on, but PAYMENTS_URL is \"https://payments:8443\": "
            "over https, ALPN chooses HTTP/2");
}

// A TLS file beside an http URL would be ignored, and the client would
// run in plain text: each one set is an error naming it and the URL.
TEST(ResolverTest, ATlsVariableBesideAnHttpUrlIsAnErrorNamingBoth) {
  for (const char* field : {"CA_FILE", "CERT_FILE", "KEY_FILE"}) {
    std::string variable = std::string("PAYMENTS_") + field;
    Resolver r(FromMap({{"PAYMENTS_URL", "http://payments:8080"}, {variable, "ca.pem"}}));
    http::Settings s = ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
    auto done = r.Finish();
    ASSERT_FALSE(done) << variable;
    EXPECT_EQ(done.error().message(),
              variable +
                  ": set, but PAYMENTS_URL is \"http://payments:8080\", which is plain text: "
                  "TLS needs an https URL");
    EXPECT_FALSE(s.tls);
  }
  // Each one set is named; an http URL that is the default, not a
  // variable, is said as the URL.
  Resolver r(FromMap({{"PAYMENTS_CA_FILE", "ca.pem"}, {"PAYMENTS_KEY_FILE", "key.pem"}}));
  http::Settings d = http::DefaultSettings();
  d.base_url = "HTTP://payments:8080";
  (void)ReadHttpSettings(r, "PAYMENTS_", d);
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "PAYMENTS_CA_FILE: set, but the URL is \"HTTP://payments:8080\", which is plain text: "
            "TLS needs an https URL; "
            "PAYMENTS_KEY_FILE: set, but the URL is \"HTTP://payments:8080\", which is plain "
            "text: TLS needs an https URL");

  // Set but empty is set.
  Resolver empty(FromMap({{"PAYMENTS_URL", "http://payments:8080"}, {"PAYMENTS_CA_FILE", ""}}));
  (void)ReadHttpSettings(empty, "PAYMENTS_", http::DefaultSettings());
  EXPECT_FALSE(empty.Finish());
}

// Variables under a prefix that was read and that nothing reads are
// misspellings until shown otherwise: each is named, with the setting it
// most likely means.
TEST(ResolverTest, AMisspeltVariableIsNamedWithTheSettingItMeans) {
  Resolver r(FromMap({{"PAYMENTS_URL", "https://payments:8443"},
                      {"PAYMENTS_TIMOUT", "3s"},
                      {"PAYMENTS_MAX_ATTEMPS", "5"},
                      {"PAYMENTS_CA_FIEL", "ca.pem"},
                      {"PAYMENTS_GZPI", "on"},
                      {"PAYMENTS_COLOUR", "blue"},
                      {"PAYMENTSTIMEOUT", "3s"},     // not under the prefix
                      {"LEDGER_TIMOUT", "3s"},       // a prefix nobody read
                      {"payments_timout", "3s"}}));  // names are case-sensitive
  http::Settings s = ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "PAYMENTS_CA_FIEL: not a setting; did you mean PAYMENTS_CA_FILE?; "
            "PAYMENTS_COLOUR: not a setting; "
            "PAYMENTS_GZPI: not a setting; did you mean PAYMENTS_GZIP?; "
            "PAYMENTS_MAX_ATTEMPS: not a setting; did you mean PAYMENTS_MAX_ATTEMPTS?; "
            "PAYMENTS_TIMOUT: not a setting; did you mean PAYMENTS_TIMEOUT?");
  EXPECT_EQ(s.timeout, std::chrono::seconds(10));  // the default: the misspelt one is not read
}

TEST(ResolverTest, EveryKnownVariableIsNotUnknown) {
  std::map<std::string, std::string> all;
  for (const std::string& name : HttpSettingsVariables("P_")) all[name] = "";
  all.erase("P_TRANSPORT");  // refused whatever its value
  Resolver r(FromMap(all));
  (void)ReadHttpSettings(r, "P_", http::DefaultSettings());
  auto done = r.Finish();
  ASSERT_FALSE(done);  // empty values are bad values
  EXPECT_EQ(done.error().message().find("not a setting"), std::string::npos)
      << done.error().message();
}

// A program that reads a variable of its own under the prefix reads it
// with the same Resolver; one it does not read is unknown.
TEST(ResolverTest, AVariableTheProgramReadsUnderThePrefixIsKnown) {
  Resolver r(FromMap({{"PAYMENTS_URL", "https://payments:8443"},
                      {"PAYMENTS_TOKEN", "s3cret"},
                      {"PAYMENTS_REGION", "eu"},
                      {"PAYMENTS_TOKN", "s3cret"}}));
  (void)ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
  std::string token =
      r.Get("PAYMENTS_TOKEN",
            Parser<std::string>([](const std::string& text) { return Result<std::string>(text); }),
            std::optional<std::string>());
  EXPECT_EQ(token, "s3cret");
  EXPECT_TRUE(r.Has("PAYMENTS_REGION"));
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(), "PAYMENTS_TOKN: not a setting; did you mean PAYMENTS_TOKEN?");
}

TEST(ResolverTest, APrefixClaimedByHandKnowsWhatIsReadUnderIt) {
  Resolver r(FromMap({{"CHECKOUT_WORKERS", "4"}, {"CHECKOUT_WORKRES", "4"}, {"OTHER", "x"}}));
  int workers = r.Get("CHECKOUT_WORKERS", Parser<int>(ParseInt), std::optional(1));
  r.ClaimPrefix("CHECKOUT_");
  EXPECT_EQ(workers, 4);
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "CHECKOUT_WORKRES: not a setting; did you mean CHECKOUT_WORKERS?");

  // Known names need not be read to be known.
  Resolver known(FromMap({{"CHECKOUT_MODE", "fast"}}));
  known.ClaimPrefix("CHECKOUT_", {"CHECKOUT_MODE"});
  EXPECT_TRUE(known.Finish());
}

// Two clients, one prefix inside the other: a variable of either is known.
TEST(ResolverTest, PrefixesInsideOneAnotherKnowEachOthersVariables) {
  Resolver r(FromMap({{"PAYMENTS_URL", "https://payments:8443"},
                      {"PAYMENTS_LEDGER_URL", "https://ledger:8443"},
                      {"PAYMENTS_LEDGER_TIMOUT", "1s"}}));
  (void)ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
  (void)ReadHttpSettings(r, "PAYMENTS_LEDGER_", http::DefaultSettings());
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "PAYMENTS_LEDGER_TIMOUT: not a setting; did you mean PAYMENTS_LEDGER_TIMEOUT?");
}

// A Lookup of a function alone cannot list its names: nothing is unknown.
TEST(ResolverTest, ALookupThatCannotListFindsNoUnknownVariables) {
  Lookup map = FromMap({{"PAYMENTS_URL", "https://payments:8443"}, {"PAYMENTS_TIMOUT", "1s"}});
  ASSERT_TRUE(map.Names());
  EXPECT_EQ(*map.Names(), (std::vector<std::string>{"PAYMENTS_TIMOUT", "PAYMENTS_URL"}));
  Resolver r([map](const std::string& name) { return map(name); });
  (void)ReadHttpSettings(r, "PAYMENTS_", http::DefaultSettings());
  EXPECT_TRUE(r.Finish()) << r.Finish().error().message();
}

// The program's choice: the process's environment, its names included.
TEST(ResolverTest, TheProcessEnvironmentListsItsNames) {
  ASSERT_EQ(setenv("OUTBOUND_RESOLVER_TEST_URL", "https://payments:8443", 1), 0);
  ASSERT_EQ(setenv("OUTBOUND_RESOLVER_TEST_MAX_ATTEMPS", "2", 1), 0);
  Resolver r(ProcessEnvironment());
  http::Settings s = ReadHttpSettings(r, "OUTBOUND_RESOLVER_TEST_", http::DefaultSettings());
  auto done = r.Finish();
  unsetenv("OUTBOUND_RESOLVER_TEST_URL");
  unsetenv("OUTBOUND_RESOLVER_TEST_MAX_ATTEMPS");
  EXPECT_EQ(s.base_url, "https://payments:8443");
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "OUTBOUND_RESOLVER_TEST_MAX_ATTEMPS: not a setting; did you mean "
            "OUTBOUND_RESOLVER_TEST_MAX_ATTEMPTS?");
}

TEST(NearestNameTest, ALikelyMisspellingOnly) {
  std::vector<std::string> known = HttpSettingsVariables("P_");
  auto nearest = [&](const char* name) { return NearestName(name, known, "P_").value_or("-"); };
  EXPECT_EQ(nearest("P_TIMOUT"), "P_TIMEOUT");
  EXPECT_EQ(nearest("P_TIMEOUTS"), "P_TIMEOUT");
  EXPECT_EQ(nearest("P_MAX_ATTEMPS"), "P_MAX_ATTEMPTS");
  EXPECT_EQ(nearest("P_GZPI"), "P_GZIP");  // a swap is one edit
  EXPECT_EQ(nearest("P_URI"), "P_URL");
  EXPECT_EQ(nearest("P_CA_FIEL"), "P_CA_FILE");
  EXPECT_EQ(nearest("P_BREAKER_WINDOWS"), "P_BREAKER_WINDOW");
  EXPECT_EQ(nearest("P_FOO"), "-");  // 3 edits from URL, of 3 letters
  EXPECT_EQ(nearest("P_COLOUR"), "-");
  EXPECT_EQ(nearest("P_TIMEOUT"), "-");  // not a misspelling: the name itself
  // Without a prefix, the whole names count.
  EXPECT_EQ(NearestName("TIMOUT", {"TIMEOUT", "URL"}).value_or("-"), "TIMEOUT");
}

// A variable is named in capitals; one typed in another case is the
// setting it spells, and so the likeliest meaning of all.
TEST(NearestNameTest, ANameInAnotherCaseIsTheSettingItSpells) {
  std::vector<std::string> known = HttpSettingsVariables("P_");
  auto nearest = [&](const char* name) { return NearestName(name, known, "P_").value_or("-"); };
  EXPECT_EQ(nearest("P_timeout"), "P_TIMEOUT");
  EXPECT_EQ(nearest("P_Ca_File"), "P_CA_FILE");
  EXPECT_EQ(nearest("P_max_attemps"), "P_MAX_ATTEMPTS");  // a case and a letter
  EXPECT_EQ(nearest("P_url"), "P_URL");
  EXPECT_EQ(nearest("P_colour"), "-");

  Resolver r(FromMap({{"P_URL", "https://payments:8443"}, {"P_timeout", "3s"}}));
  (void)ReadHttpSettings(r, "P_", http::DefaultSettings());
  auto read = r.Finish();
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message(), "P_timeout: not a setting; did you mean P_TIMEOUT?");
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
