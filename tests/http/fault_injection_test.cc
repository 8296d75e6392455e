// SPDX-License-Identifier: Apache-2.0
// Failure injection in fake time: a scenario in a call's baggage aborts,
// delays or answers this client's attempts, and every layer sees it as real.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client_test_support.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;

class FaultInjectionTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  FaultInjectionTest() { runtime.telemetry = telemetry.telemetry(); }

  std::unique_ptr<Client> FaultyClient(Settings settings) {
    Serve([](const ServerRequest&) { return Reply::Ok("real"); });
    return MakeClient(std::move(settings));
  }
  Settings FaultsOn() {
    Settings settings = PaymentsSettings();
    settings.faults.enabled = true;
    return settings;
  }
  static Request WithScenario(std::string scenario) {
    return Request::Get("/charges")
        .WithContext(Context{
            .baggage = {{"tenant", "acme", ""}, {"outbound-fault", std::move(scenario), ""}}});
  }
  std::vector<std::string> InjectedOnSpans() {
    std::vector<std::string> kinds;
    for (const auto& span : telemetry.Spans(telemetry::SpanKind::kClient)) {
      const telemetry::Value* value = nullptr;
      for (const auto& attribute : span.attributes) {
        if (attribute.key == "outbound.fault.injected") value = &attribute.value;
      }
      kinds.push_back(value ? std::get<std::string>(*value) : "");
    }
    return kinds;
  }

  testing::InMemoryTelemetry telemetry;
};

TEST_F(FaultInjectionTest, AnAbortIsATransportErrorRetriedAndCountedByTheBreaker) {
  auto client = FaultyClient(FaultsOn());
  auto call = client->SendAsync(WithScenario("http:payments:8443=abort"));
  AdvanceAfterAttempt(1, milliseconds(50));
  AdvanceAfterAttempt(2, milliseconds(100));
  auto result = call.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kTransport);
  EXPECT_THAT(result.error().message(), HasSubstr("injected"));
  EXPECT_EQ(result.error().attempts(), 3);
  EXPECT_EQ(server->request_count(), 0u);
  auto records = Attempts();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].decision, retry::DecisionKind::kAgain);
  EXPECT_EQ(records[2].decision, retry::DecisionKind::kExhausted);
  EXPECT_EQ(telemetry.Value("outbound.circuit.calls", {{"outcome", "failure"}}), 3);
  EXPECT_EQ(InjectedOnSpans(), (std::vector<std::string>{"abort", "abort", "abort"}));
}

TEST_F(FaultInjectionTest, ADelayIsWaitedInsideTheAttemptTimeout) {
  Settings settings = FaultsOn();
  settings.attempt_timeout = std::chrono::seconds(1);
  settings.max_attempts = 1;
  auto client = FaultyClient(std::move(settings));
  TimePoint start = clock.Now();
  auto slow = client->SendAsync(WithScenario("http:payments:8443=delay:2s"));
  clock.Advance(milliseconds(999));
  EXPECT_EQ(slow.wait_for(milliseconds(50)), std::future_status::timeout);
  clock.Advance(milliseconds(1));
  auto result = slow.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline);
  EXPECT_THAT(result.error().message(), HasSubstr("attempt timeout"));
  EXPECT_EQ(clock.Now() - start, std::chrono::seconds(1));
  EXPECT_EQ(server->request_count(), 0u);

  // A shorter delay: the real request goes once it is over.
  auto delayed = client->SendAsync(WithScenario("http:payments:8443=delay:500ms"));
  clock.Advance(milliseconds(499));
  EXPECT_EQ(delayed.wait_for(milliseconds(50)), std::future_status::timeout);
  EXPECT_EQ(server->request_count(), 0u);
  clock.Advance(milliseconds(1));
  auto answered = delayed.get();
  ASSERT_TRUE(answered) << answered.error().message();
  EXPECT_EQ(answered->body, "real");
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(FaultInjectionTest, AStatusAnswersInsteadOfTheDependencyWithItsProbability) {
  // The test's randomness always draws one half.
  auto client = FaultyClient(FaultsOn());
  auto call =
      client->SendAsync(WithScenario("http:ledger:443=abort; http:payments:8443=status:503,60%"));
  AdvanceAfterAttempt(1, milliseconds(50));
  AdvanceAfterAttempt(2, milliseconds(100));
  auto injected = call.get();
  ASSERT_TRUE(injected);
  EXPECT_EQ(injected->status, 503);
  EXPECT_EQ(server->request_count(), 0u);
  EXPECT_EQ(InjectedOnSpans(), (std::vector<std::string>{"status", "status", "status"}));

  auto spared = client->Send(WithScenario("http:payments:8443=status:503,40%"));
  ASSERT_TRUE(spared);
  EXPECT_EQ(spared->status, 200);
  EXPECT_EQ(server->request_count(), 1u);
}

// As a real overloaded dependency would: the 503 carries Retry-After, and
// the retry waits exactly that long instead of its 50 ms backoff.
TEST_F(FaultInjectionTest, AStatusCanCarryARetryAfterThatTheRetryHonours) {
  Settings settings = FaultsOn();
  settings.max_attempts = 2;
  auto client = FaultyClient(std::move(settings));
  TimePoint start = clock.Now();
  auto call = client->SendAsync(WithScenario("http:payments:8443=status:503,retry-after:2"));
  ASSERT_TRUE(WaitForAttempts(1));
  ASSERT_TRUE(clock.WaitForTimers(2));  // the wait, and the call's deadline
  EXPECT_EQ(clock.next_timer(), start + std::chrono::seconds(2));
  clock.Advance(std::chrono::seconds(2));
  auto result = call.get();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 503);
  EXPECT_EQ(result->header("Retry-After"), "2");
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(FaultInjectionTest, TheScenarioIsStrippedFromTheBaggageSentUnlessForwarded) {
  Settings settings = FaultsOn();
  auto client = FaultyClient(settings);
  ASSERT_TRUE(client->Send(WithScenario("http:ledger:443=abort")));
  EXPECT_EQ(server->requests()[0].header("baggage"), "tenant=acme");

  settings.faults.forward_scenario = true;
  auto forwarding = MakeClient(settings);
  ASSERT_TRUE(forwarding->Send(WithScenario("http:ledger:443=abort")));
  EXPECT_THAT(server->requests()[1].header("baggage"), HasSubstr("outbound-fault="));
}

// One switch for every client of a process: the Runtime's.
TEST_F(FaultInjectionTest, TheRuntimeTurnsFaultsOnForEveryClientBuiltOnIt) {
  runtime.inject_faults = true;
  auto client = FaultyClient(PaymentsSettings());  // faults.enabled not set
  auto result = client->Send(WithScenario("http:payments:8443=status:418"));
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->status, 418);
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(FaultInjectionTest, WithFaultsOffNothingIsReadOrStripped) {
  auto client = FaultyClient(PaymentsSettings());
  auto result = client->Send(WithScenario("http:payments:8443=abort"));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->body, "real");
  EXPECT_THAT(server->requests()[0].header("baggage"), HasSubstr("outbound-fault="));
  EXPECT_EQ(InjectedOnSpans(), (std::vector<std::string>{""}));
}

// docs/failure-injection.md: the point is compared without regard to case,
// its scheme as much as its host.
TEST_F(FaultInjectionTest, APointInCapitalsIsTheSamePoint) {
  auto client = FaultyClient(FaultsOn());
  for (const char* scenario :
       {"HTTP:PAYMENTS:8443=status:418", "Http:Payments:8443=status:418",
        "http:PAYMENTS:8443=status:418", " HTTP:payments:8443 =status:418"}) {
    auto result = client->Send(WithScenario(scenario));
    ASSERT_TRUE(result) << scenario;
    EXPECT_EQ(result->status, 418) << scenario;
  }
  EXPECT_EQ(telemetry.Value("outbound.fault.malformed"), 0);
  EXPECT_EQ(server->request_count(), 0u);
  // Another point in capitals is still another point, and a scheme that
  // is neither http nor grpc is still malformed.
  EXPECT_EQ(client->Send(WithScenario("HTTP:LEDGER:443=status:418"))->status, 200);
  EXPECT_EQ(client->Send(WithScenario("HTTPS:PAYMENTS:8443=status:418"))->status, 200);
  EXPECT_EQ(telemetry.Value("outbound.fault.malformed"), 1);
}

TEST_F(FaultInjectionTest, AMalformedScenarioIsIgnoredAndCounted) {
  auto client = FaultyClient(FaultsOn());
  for (const char* scenario :
       {"http:payments:8443=explode", "http:payments:8443=abort,150%", "payments=abort",
        "http:payments:8443=delay:soon", "http:payments:8443=status:42",
        "http:payments:8443=abort,retry-after:2", "http:payments:8443=status:503,retry-after:-1",
        "http:payments:8443=status:503,50%,50%"}) {
    auto result = client->Send(WithScenario(scenario));
    ASSERT_TRUE(result) << scenario;
    EXPECT_EQ(result->body, "real") << scenario;
  }
  EXPECT_EQ(telemetry.Value("outbound.fault.malformed"), 8);
  EXPECT_EQ(server->request_count(), 8u);
  EXPECT_EQ(server->requests()[0].header("baggage"), "tenant=acme");
}

TEST_F(FaultInjectionTest, RequestLoggingWritesOneDebugRecordPerAttemptWithoutHeaders) {
  Settings settings = FaultsOn();
  settings.request_logging = true;
  settings.max_attempts = 1;
  auto client = FaultyClient(std::move(settings));
  ASSERT_FALSE(client->Send(WithScenario("http:payments:8443=abort")));
  ASSERT_TRUE(client->Send(Request::Get("/charges").Header("X-Api-Key", "k-123")));
  auto logs = telemetry.Logs();
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].body, "HTTP request failed");
  EXPECT_EQ(logs[0].severity, telemetry::Severity::kDebug);
  EXPECT_EQ(logs[1].body, "HTTP request completed");
  auto text = [](const telemetry::LogRecord& log, std::string_view key) -> std::string {
    for (const auto& attribute : log.attributes) {
      if (attribute.key != key) continue;
      if (const auto* s = std::get_if<std::string>(&attribute.value)) return *s;
      if (const auto* i = std::get_if<std::int64_t>(&attribute.value)) return std::to_string(*i);
    }
    return "";
  };
  EXPECT_EQ(text(logs[0], "error.type"), "transport");
  EXPECT_EQ(text(logs[1], "url.full"), "https://payments:8443/charges");
  EXPECT_EQ(text(logs[1], "http.response.status_code"), "200");
  for (const auto& log : logs) {
    for (const auto& attribute : log.attributes) {
      if (const auto* s = std::get_if<std::string>(&attribute.value)) {
        EXPECT_EQ(s->find("k-123"), std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace outbound::http
