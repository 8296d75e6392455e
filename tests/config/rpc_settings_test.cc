// SPDX-License-Identifier: Apache-2.0
// config::ReadRpcSettings: the gRPC client's settings from variables, by
// the HTTP reader's rules (resolver_test.cc).
#include "outbound/config/rpc_settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "../testing/test_support.h"
#include "outbound/testing/test_ca.h"

namespace outbound::config {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

rpc::Settings WithAddr(const std::string& addr) {
  rpc::Settings d = rpc::DefaultSettings();
  d.addr = addr;
  return d;
}

TEST(RpcSettingsTest, AppliesDefaultsWhenUnset) {
  Resolver r(FromMap({}));
  rpc::Settings s = ReadRpcSettings(r, "OUTBOUND_", WithAddr("carts:9090"));
  ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
  EXPECT_EQ(s.addr, "carts:9090");
  EXPECT_FALSE(s.tls);
  EXPECT_EQ(s.timeout, seconds(10));
  EXPECT_EQ(s.max_attempts, 3);
  EXPECT_EQ(s.backoff_base, milliseconds(100));
  EXPECT_EQ(s.breaker.open_for, seconds(10));
  EXPECT_FALSE(s.faults.enabled);
  EXPECT_FALSE(s.max_connection_age);  // off
  EXPECT_FALSE(s.attempt_timeout);     // off
  EXPECT_TRUE(rpc::Validate(s)) << rpc::Validate(s).error().message();
}

TEST(RpcSettingsTest, ReadsEveryVariable) {
  Resolver r(FromMap({{"P_ADDR", "ledger:7070"},
                      {"P_TIMEOUT", "3s"},
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
                      {"P_TLS", "on"},
                      {"P_FAULTS", "on"},
                      {"P_NON_IDEMPOTENT_METHODS", "/ledger.v1.Ledger/Post, /ledger.v1.Ledger/Pay"},
                      {"P_MAX_RECEIVE_MESSAGE_BYTES", "1048576"},
                      {"P_MAX_SEND_MESSAGE_BYTES", "65536"},
                      {"P_GZIP_REQUESTS", "on"},
                      {"P_MAX_CONNECTION_AGE", "1h"},
                      {"P_ATTEMPT_TIMEOUT", "2s"},
                      {"P_RATE_LIMIT", "50/s,10"},
                      {"P_BULKHEAD", "64,16,50ms"},
                      {"P_ADAPTIVE_CONCURRENCY", "on"},
                      {"P_ADAPTIVE_CONCURRENCY_INITIAL_LIMIT", "5"},
                      {"P_ADAPTIVE_CONCURRENCY_MIN_LIMIT", "2"},
                      {"P_ADAPTIVE_CONCURRENCY_MAX_LIMIT", "50"},
                      {"P_ADAPTIVE_CONCURRENCY_SAMPLE_WINDOW", "1s"},
                      {"P_HEDGING", "on"},
                      {"P_HEDGING_DELAY", "30ms"},
                      {"P_HEDGING_PERCENTILE", "0.95"},
                      {"P_HEDGING_MAX_IN_FLIGHT", "3"},
                      {"P_HEDGING_MAX_EXTRA", "0.02"}}));
  rpc::Settings s = ReadRpcSettings(r, "P_", rpc::DefaultSettings());
  ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
  EXPECT_EQ(s.addr, "ledger:7070");
  ASSERT_TRUE(s.tls);
  EXPECT_TRUE(s.tls->root_pem.empty());  // the system's roots
  EXPECT_EQ(s.timeout, seconds(3));
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
  EXPECT_TRUE(s.faults.enabled);
  EXPECT_EQ(s.non_idempotent_methods,
            (std::vector<std::string>{"/ledger.v1.Ledger/Post", "/ledger.v1.Ledger/Pay"}));
  EXPECT_EQ(s.max_receive_message_bytes, 1048576u);
  EXPECT_EQ(s.max_send_message_bytes, 65536u);
  EXPECT_TRUE(s.gzip_requests);
  EXPECT_EQ(s.max_connection_age, std::chrono::hours(1));
  EXPECT_EQ(s.attempt_timeout, seconds(2));
  ASSERT_TRUE(s.rate_limit);
  EXPECT_DOUBLE_EQ(s.rate_limit->per_second, 50);
  EXPECT_EQ(s.rate_limit->burst, 10);
  ASSERT_TRUE(s.bulkhead);
  EXPECT_EQ(s.bulkhead->max_calls, 64);
  EXPECT_EQ(s.bulkhead->max_queued, 16);
  EXPECT_EQ(s.bulkhead->max_wait, milliseconds(50));
  ASSERT_TRUE(s.adaptive_concurrency);
  EXPECT_EQ(s.adaptive_concurrency->initial_limit, 5);
  EXPECT_EQ(s.adaptive_concurrency->min_limit, 2);
  EXPECT_EQ(s.adaptive_concurrency->max_limit, 50);
  EXPECT_EQ(s.adaptive_concurrency->sample_window, seconds(1));
  ASSERT_TRUE(s.hedging);
  EXPECT_EQ(s.hedging->delay, milliseconds(30));
  EXPECT_EQ(s.hedging->percentile, 0.95);
  EXPECT_EQ(s.hedging->max_attempts_in_flight, 3);
  EXPECT_EQ(s.hedging->max_extra_share, 0.02);
  EXPECT_TRUE(rpc::Validate(s)) << rpc::Validate(s).error().message();
}

// The HTTP reader's parsers and checks, under the gRPC prefix.
TEST(RpcSettingsTest, ABadBulkheadOrRateLimitIsNamedAsForHttp) {
  Resolver r(FromMap(
      {{"CARTS_ADDR", "carts:9090"}, {"CARTS_BULKHEAD", "0"}, {"CARTS_RATE_LIMIT", "fast"}}));
  rpc::Settings s = ReadRpcSettings(r, "CARTS_", rpc::DefaultSettings());
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_NE(
      done.error().message().find("CARTS_BULKHEAD: the calls in flight must be from 1 to 100000"),
      std::string::npos)
      << done.error().message();
  EXPECT_NE(done.error().message().find("CARTS_RATE_LIMIT: \"fast\" is not a rate such as 50/s"),
            std::string::npos)
      << done.error().message();
  EXPECT_FALSE(s.rate_limit);
  rpc::Settings bad = WithAddr("carts:9090");
  bad.bulkhead = http::Bulkhead{.max_calls = 1, .max_queued = 1};  // a queue with no wait
  bad.rate_limit = http::RateLimit{.per_second = 0};
  auto valid = rpc::Validate(bad);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message(),
            "Settings.rate_limit: the rate must be a positive number of calls a second; "
            "Settings.bulkhead: a queue needs a positive wait");
}

TEST(RpcSettingsTest, EveryNameItReadsIsListed) {
  std::map<std::string, std::string> seen;
  Resolver r([&](const std::string& name) -> std::optional<std::string> {
    seen[name] = "";
    return std::nullopt;
  });
  rpc::Settings d = WithAddr("carts:9090");
  d.tls = rpc::TlsSettings{};
  (void)ReadRpcSettings(r, "CARTS_", d);
  std::vector<std::string> listed = RpcSettingsVariables("CARTS_");
  std::vector<std::string> read;
  for (const auto& [name, value] : seen) read.push_back(name);
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(read, listed);
  EXPECT_EQ(listed.size(), 43u);
}

TEST(RpcSettingsTest, TheAddrMustBeSetAndBeHostAndPort) {
  Resolver unset(FromMap({}));
  (void)ReadRpcSettings(unset, "CARTS_", rpc::DefaultSettings());
  auto done = unset.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(), "CARTS_ADDR: must be set");

  Resolver bad(FromMap({{"CARTS_ADDR", "http://carts:9090"}}));
  (void)ReadRpcSettings(bad, "CARTS_", rpc::DefaultSettings());
  done = bad.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message().rfind("CARTS_ADDR: ", 0), 0u) << done.error().message();
}

TEST(RpcSettingsTest, ReportsEveryBadVariableTogetherByName) {
  Resolver r(FromMap({{"OUTBOUND_TIMEOUT", "soon"},
                      {"OUTBOUND_MAX_ATTEMPTS", "0"},
                      {"OUTBOUND_BACKOFF_BASE", "2s"},
                      {"OUTBOUND_BACKOFF_MAX", "1s"},
                      {"OUTBOUND_BREAKER_CALLS_PER_PROBE", "0"},
                      {"OUTBOUND_FAULTS", "yes"},
                      {"OUTBOUND_NON_IDEMPOTENT_METHODS", "/ledger.v1.Ledger/Post,Pay"},
                      {"OUTBOUND_MAX_RECEIVE_MESSAGE_BYTES", "0"},
                      {"OUTBOUND_MAX_SEND_MESSAGE_BYTES", "4GiB"},
                      {"OUTBOUND_MAX_CONNECTION_AGE", "-5m"}}));
  (void)ReadRpcSettings(r, "OUTBOUND_", WithAddr("carts:9090"));
  auto done = r.Finish();
  ASSERT_FALSE(done);
  const std::string& message = done.error().message();
  for (const char* failure :
       {"OUTBOUND_TIMEOUT: \"soon\" is not a duration", "OUTBOUND_MAX_ATTEMPTS: must be 1 or more",
        "OUTBOUND_BREAKER_CALLS_PER_PROBE: ", "OUTBOUND_FAULTS: must be on or off",
        "OUTBOUND_BACKOFF_MAX: must be at least OUTBOUND_BACKOFF_BASE",
        "OUTBOUND_NON_IDEMPOTENT_METHODS: \"Pay\" is not a method's full name",
        "OUTBOUND_MAX_RECEIVE_MESSAGE_BYTES: must be 1 to 4294967295",
        "OUTBOUND_MAX_SEND_MESSAGE_BYTES: \"4GiB\" is not a whole number",
        "OUTBOUND_MAX_CONNECTION_AGE: \"-5m\" is not a duration"}) {
    EXPECT_NE(message.find(failure), std::string::npos) << failure << "\n" << message;
  }
}

TEST(RpcSettingsTest, TlsFilesAreReadWithTlsOn) {
  testing::TempDir dir;
  testing::TestCA ca;
  testing::Certificate me = ca.IssueClient("client");
  std::string cafile = dir.Write("ca.pem", ca.pem());
  std::string cert = dir.Write("cert.pem", me.chain_pem);
  std::string key = dir.Write("key.pem", me.key_pem);
  Resolver r(FromMap({{"CARTS_ADDR", "carts:9090"},
                      {"CARTS_TLS", "on"},
                      {"CARTS_CA_FILE", cafile},
                      {"CARTS_CERT_FILE", cert},
                      {"CARTS_KEY_FILE", key}}));
  rpc::Settings s = ReadRpcSettings(r, "CARTS_", rpc::DefaultSettings());
  ASSERT_TRUE(r.Finish()) << r.Finish().error().message();
  ASSERT_TRUE(s.tls);
  EXPECT_EQ(s.tls->root_pem, ca.pem());
  EXPECT_EQ(s.tls->client_cert_pem, me.chain_pem);
  EXPECT_EQ(s.tls->client_key_pem, me.key_pem);

  // TLS in the defaults is on without the variable, and off with it.
  rpc::Settings tls_default = WithAddr("carts:9090");
  tls_default.tls = rpc::TlsSettings{ca.pem(), "", ""};
  Resolver by_default(FromMap({}));
  EXPECT_TRUE(ReadRpcSettings(by_default, "CARTS_", tls_default).tls);
  Resolver turned_off(FromMap({{"CARTS_TLS", "off"}}));
  EXPECT_FALSE(ReadRpcSettings(turned_off, "CARTS_", tls_default).tls);
  EXPECT_TRUE(turned_off.Finish());
}

TEST(RpcSettingsTest, AFileThatIsNotPemOrAKeyWithoutItsCertificateIsNamed) {
  testing::TempDir dir;
  testing::TestCA ca;
  std::string der = dir.Write("ca.der", "0\x82\x01");
  std::string key = dir.Write("key.pem", ca.IssueClient("c").key_pem);
  Resolver r(FromMap({{"P_TLS", "on"}, {"P_CA_FILE", der}, {"P_KEY_FILE", key}}));
  (void)ReadRpcSettings(r, "P_", WithAddr("carts:9090"));
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "P_CA_FILE: \"" + der +
                "\" is not PEM (no -----BEGIN line); P_CERT_FILE, P_KEY_FILE: a client "
                "certificate needs its key, and a key its certificate");
}

// Both given, the certificate's file a key: that file is named, and not a
// certificate without its key.
TEST(RpcSettingsTest, ACertificateFileThatIsNotOneIsNamedAlone) {
  testing::TempDir dir;
  testing::TestCA ca;
  std::string key = dir.Write("key.pem", ca.IssueClient("c").key_pem);
  Resolver r(FromMap({{"P_TLS", "on"}, {"P_CERT_FILE", key}, {"P_KEY_FILE", key}}));
  (void)ReadRpcSettings(r, "P_", WithAddr("carts:9090"));
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_THAT(done.error().message(), ::testing::StartsWith("P_CERT_FILE: \"" + key + "\""));
  EXPECT_THAT(done.error().message(), ::testing::Not(::testing::HasSubstr("needs its key")));
}

// A TLS file with TLS off would be ignored, and the calls made in plain
// text: the reader refuses, naming the file's variable and what is off.
TEST(RpcSettingsTest, ATlsFileWithTlsOffIsAnErrorNamingBoth) {
  testing::TempDir dir;
  testing::TestCA ca;
  std::string cafile = dir.Write("ca.pem", ca.pem());
  Resolver unset(FromMap({{"CARTS_CA_FILE", cafile}}));
  rpc::Settings s = ReadRpcSettings(unset, "CARTS_", WithAddr("carts:9090"));
  EXPECT_FALSE(s.tls);
  auto done = unset.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "CARTS_CA_FILE: set, but TLS is off (CARTS_TLS is unset, and plain text the "
            "default): set CARTS_TLS=on for TLS");

  Resolver off(FromMap({{"CARTS_TLS", "off"}, {"CARTS_CERT_FILE", cafile}}));
  (void)ReadRpcSettings(off, "CARTS_", WithAddr("carts:9090"));
  done = off.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "CARTS_CERT_FILE: set, but CARTS_TLS is off: set CARTS_TLS=on for TLS");
}

TEST(RpcSettingsTest, AMisspeltVariableIsNamedWithTheSettingItMeans) {
  Resolver r(FromMap({{"CARTS_ADDR", "carts:9090"},
                      {"CARTS_TIMOUT", "3s"},
                      {"CARTS_MAX_ATTEMPS", "5"},
                      {"CARTS_TSL", "on"},
                      {"CARTS_COLOUR", "blue"},
                      {"LEDGER_TIMOUT", "3s"}}));  // a prefix nobody read
  rpc::Settings s = ReadRpcSettings(r, "CARTS_", rpc::DefaultSettings());
  auto done = r.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "CARTS_COLOUR: not a setting; "
            "CARTS_MAX_ATTEMPS: not a setting; did you mean CARTS_MAX_ATTEMPTS?; "
            "CARTS_TIMOUT: not a setting; did you mean CARTS_TIMEOUT?; "
            "CARTS_TSL: not a setting; did you mean CARTS_TLS?");
  EXPECT_EQ(s.timeout, seconds(10));  // the default: the misspelt one is not read
}

TEST(RpcSettingsTest, EveryListedVariableIsKnown) {
  std::map<std::string, std::string> all;
  for (const std::string& name : RpcSettingsVariables("P_")) all[name] = "";
  Resolver r(FromMap(all));
  (void)ReadRpcSettings(r, "P_", rpc::DefaultSettings());
  auto done = r.Finish();
  ASSERT_FALSE(done);  // empty values are bad, but none is unknown
  EXPECT_EQ(done.error().message().find("not a setting"), std::string::npos)
      << done.error().message();
}

}  // namespace
}  // namespace outbound::config
