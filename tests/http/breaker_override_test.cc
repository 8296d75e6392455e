// SPDX-License-Identifier: Apache-2.0
// An operator's control of a client's breaker from code
// (Client::OverrideBreaker): force open, hold closed, isolate, release; each
// logged, counted and shown by the state gauge. On the kit's FakeTransport,
// in fake time.
#include <gtest/gtest.h>

#include "client_test_support.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http {
namespace {

using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

class BreakerOverrideTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  BreakerOverrideTest() { runtime.telemetry = recorded.telemetry(); }

  double State(std::string_view state) {
    return recorded.Value("outbound.circuit.state", {{"state", state}});
  }

  testing::InMemoryTelemetry recorded{DefaultRandom()};
};

TEST_F(BreakerOverrideTest, AForcedOpenClientFailsAtOnceAndSendsNothing) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  client->OverrideBreaker(circuit::Override::kForceOpen);
  auto result = client->Send(Request::Get("/"));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(server->request_count(), 0U);
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
  ASSERT_EQ(Transitions().size(), 1U);
  EXPECT_TRUE(Transitions()[0].forced);
  // Forced open follows the breaker's rules from there: its interval
  // passes, a probe goes, and successes close it.
  clock.Advance(seconds(1));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "force_open"}}), 1);
}

TEST_F(BreakerOverrideTest, ForcedClosedSendsWhileFailuresWouldOpenIt) {
  Serve([](const ServerRequest&) { return Reply::Status(500); });
  auto client = MakeClient();
  client->OverrideBreaker(circuit::Override::kForceClosed);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(server->request_count(), 10U);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_EQ(State("forced-closed"), 1);
  EXPECT_EQ(State("closed"), 0);
  // Released, its rules hold again: the next failure opens it.
  client->OverrideBreaker(circuit::Override::kRelease);
  EXPECT_EQ(State("closed"), 1);
  EXPECT_EQ(State("forced-closed"), 0);
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
}

TEST_F(BreakerOverrideTest, IsolateSendsNoProbeUntilReleased) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  client->OverrideBreaker(circuit::Override::kIsolate);
  EXPECT_EQ(State("isolated"), 1);
  EXPECT_EQ(State("open"), 0);
  // Far past any open interval, and past calls_per_probe turned away.
  for (int i = 0; i < 60; ++i) {
    clock.Advance(seconds(10));
    auto result = client->Send(Request::Get("/"));
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().kind(), ErrorKind::kRejected);
  }
  EXPECT_EQ(server->request_count(), 0U);
  client->OverrideBreaker(circuit::Override::kRelease);
  EXPECT_EQ(client->breaker_state(), circuit::State::kHalfOpen);
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(server->request_count(), 1U);
  EXPECT_EQ(State("isolated"), 0);
}

TEST_F(BreakerOverrideTest, EveryOverrideIsLoggedAndCounted) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  client->OverrideBreaker(circuit::Override::kIsolate);
  client->OverrideBreaker(circuit::Override::kRelease);
  client->OverrideBreaker(circuit::Override::kForceClosed);
  std::vector<std::string> overrides;
  for (const auto& log : recorded.Logs()) {
    if (log.body.rfind("circuit breaker override: ", 0) != 0) continue;
    EXPECT_EQ(log.severity, telemetry::Severity::kWarn);
    EXPECT_EQ(log.scope, "outbound.http");
    overrides.push_back(
        std::get<std::string>(*telemetry::Find(log.attributes, "outbound.circuit.override")));
  }
  EXPECT_EQ(overrides, (std::vector<std::string>{"isolate", "release", "force_closed"}));
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "isolate"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "release"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "force_closed"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "force_open"}}), 0);
}

}  // namespace
}  // namespace outbound::http
