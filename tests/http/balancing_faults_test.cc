// SPDX-License-Identifier: Apache-2.0
// Settings::balancing against replicas that fail in the ways the others
// (balancing_test.cc) do not: three replicas of payments on the kit's
// FakeServers, in fake time. One that resets every stream is ejected and
// no call fails; a dial that fails has the name resolved again at once,
// not on the period; an ejection is logged, counted and put on the span of
// the attempt that caused it.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "balancing_test_support.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http {
namespace {

using std::chrono::hours;
using testing::Reply;
using testing::ServerRequest;

class BalancingFaultsTest : public BalancingTestBase {
 protected:
  // "127.0.0.1:PORT", as the client names an endpoint.
  static std::string EndpointName(const testing::FakeServer& replica) {
    return "127.0.0.1:" + std::to_string(replica.port());
  }

  // 1000 calls to three replicas, the second answering every stream with
  // RST_STREAM `code`: every call succeeds, the breaker never opens, the
  // resetting replica gets its run of five and at most 1 % of the
  // attempts, and each reset's call was answered by another replica.
  void ExpectEjectedWhenEveryStreamIsReset(std::uint32_t code) {
    StartReplica(Echo);
    StartReplica([code](const ServerRequest&) { return Reply::Reset(code); });
    StartReplica(Echo);
    Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
    auto client = MakeClient(BalancedSettings());
    EXPECT_EQ(Count(Call(*client, 1000), 200), 1000);
    EXPECT_TRUE(Transitions().empty());
    std::size_t bad = replicas[1]->request_count();
    EXPECT_GE(bad, 5u);
    EXPECT_LE(bad, 10u);  // 1 % of 1000
    EXPECT_EQ(Attempts().size(), 1000u + bad);
    EXPECT_EQ(static_cast<std::size_t>(FailedAttempts()), bad);
  }
};

TEST_F(BalancingFaultsTest, AnEndpointResettingEveryStreamIsEjectedAndNoCallFails) {
  ExpectEjectedWhenEveryStreamIsReset(2);  // INTERNAL_ERROR
}

TEST_F(BalancingFaultsTest, AnEndpointRefusingEveryStreamIsEjectedAndNoCallFails) {
  ExpectEjectedWhenEveryStreamIsReset(7);  // REFUSED_STREAM
}

TEST_F(BalancingFaultsTest, ADialThatFailsHasTheNameResolvedAgainBeforeItsPeriod) {
  StartReplica(Echo);
  StartReplica(Echo);
  StartReplica(Echo);
  Name({replicas[0]->port(), replicas[1]->port()});
  Settings s = BalancedSettings();
  s.balancing->re_resolve_every = hours(24);  // only a failed dial resolves it again
  auto client = MakeClient(s);
  const TimePoint start = clock.Now();
  EXPECT_EQ(Count(Call(*client, 100), 200), 100);
  ASSERT_GT(replicas[1]->request_count(), 0u);

  // The second replica leaves the name for the third; the client, its
  // connection to the second still up, does not look.
  Name({replicas[0]->port(), replicas[2]->port()});
  EXPECT_EQ(Count(Call(*client, 100), 200), 100);
  EXPECT_EQ(replicas[2]->request_count(), 0u);

  // The second replica stops: its connection goes (GOAWAY), the next dial
  // to it is refused, and that has the name resolved again at once.
  replicas[1]->Stop();
  EXPECT_EQ(Count(Call(*client, 300), 200), 300);
  EXPECT_GE(replicas[2]->request_count(), 60u);
  EXPECT_LT(clock.Now() - start, hours(1));  // long before the period
  // The refused dial's attempts went again elsewhere; the breaker stayed
  // closed.
  EXPECT_TRUE(Transitions().empty());
}

// Two of three replicas answer 503 to everything: at most half of the
// endpoints are out at once (OutlierDetection::max_ejected_share), so one
// is ejected and the other keeps its share of first attempts; with the
// share at 1, both go out after their runs of five.
TEST_F(BalancingFaultsTest, NoMoreThanTheSetShareOfEndpointsIsEjectedAtOnce) {
  testing::InMemoryTelemetry recorded{DefaultRandom()};
  runtime.telemetry = recorded.telemetry();
  auto unavailable = [](const ServerRequest&) { return Reply::Status(503); };
  StartReplica(Echo);
  StartReplica(unavailable);
  StartReplica(unavailable);
  Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
  auto ejections = [&](int replica) {
    return recorded.Value("outbound.endpoint.ejections",
                          {{"network.peer.address", EndpointName(*replicas[replica])}});
  };
  // Two failing replicas of three is the dependency's own trouble, which
  // its breaker would rightly see: it never trips here, so the ejections
  // are what the test sees.
  Settings settings = BalancedSettings();
  settings.breaker_policy.trip = [](const circuit::Counts&) { return false; };
  {
    auto client = MakeClient(settings);
    // Many calls fail: the one bad replica left in takes its share of first
    // attempts, and the retry budget allows a retry for only a few of them.
    // That is the price of the cap, which keeps an outlier detector from
    // ejecting most of a dependency whose replicas are all sick.
    Call(*client, 300, 1);
    EXPECT_EQ(ejections(1) + ejections(2), 1);  // 50 % of 3: one at a time
    // The one left in still gets first attempts: far more than its run of five.
    EXPECT_GE(replicas[1]->request_count() + replicas[2]->request_count(), 50u);
  }
  std::size_t before = replicas[1]->request_count() + replicas[2]->request_count();
  settings.balancing->outlier_detection.max_ejected_share = 1;
  // A call's next attempt avoids only its last endpoint: five attempts, so
  // no call runs out of them between the two bad replicas.
  settings.max_attempts = 5;
  auto client = MakeClient(std::move(settings));
  EXPECT_EQ(Count(Call(*client, 300, 1), 200), 300);
  // Each bad replica's run of five, and then none.
  EXPECT_EQ(replicas[1]->request_count() + replicas[2]->request_count() - before, 10u);
}

TEST_F(BalancingFaultsTest, AnEjectionIsLoggedCountedAndAnEventOnTheAttemptsSpan) {
  testing::InMemoryTelemetry recorded{DefaultRandom()};
  runtime.telemetry = recorded.telemetry();
  StartReplica(Echo);
  StartReplica([](const ServerRequest&) { return Reply::Status(503); });
  StartReplica(Echo);
  Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
  const std::string bad = EndpointName(*replicas[1]);
  auto client = MakeClient(BalancedSettings());
  // One call at a time: the bad replica gets exactly its run of five.
  EXPECT_EQ(Count(Call(*client, 200, 1), 200), 200);
  ASSERT_EQ(replicas[1]->request_count(), 5u);

  // Logged: one warning naming the endpoint and how long it is out.
  std::vector<telemetry::LogRecord> ejections;
  for (const auto& log : recorded.Logs()) {
    if (log.body.find("ejected") != std::string::npos) ejections.push_back(log);
  }
  ASSERT_EQ(ejections.size(), 1u);
  EXPECT_EQ(ejections[0].severity, telemetry::Severity::kWarn);
  EXPECT_EQ(ejections[0].body,
            "outbound: endpoint " + bad + " ejected for 30 s after failing in a row");
  EXPECT_EQ(*telemetry::Find(ejections[0].attributes, "network.peer.address"),
            telemetry::Value(bad));
  EXPECT_EQ(*telemetry::Find(ejections[0].attributes, "server.address"),
            telemetry::Value(std::string("payments")));

  // Counted, by endpoint.
  EXPECT_EQ(recorded.Value("outbound.endpoint.ejections", {{"network.peer.address", bad}}), 1);
  std::optional<telemetry::DataPoint> good = recorded.Point(
      "outbound.endpoint.ejections", {{"network.peer.address", EndpointName(*replicas[0])}});
  EXPECT_FALSE(good.has_value());

  // Spanned: the event is on the span of the fifth attempt at the bad
  // endpoint, the one that ejected it; every attempt's span names its
  // endpoint.
  std::vector<telemetry::SpanData> spans = recorded.Spans(telemetry::SpanKind::kClient);
  ASSERT_EQ(spans.size(), 205u);
  int at_bad = 0;
  int with_event = 0;
  for (const auto& span : spans) {
    const telemetry::Value* peer = telemetry::Find(span.attributes, "network.peer.address");
    ASSERT_NE(peer, nullptr) << span.name;
    if (*peer == telemetry::Value(bad)) ++at_bad;
    for (const auto& event : span.events) {
      if (event.name != "outbound.endpoint.ejected") continue;
      ++with_event;
      EXPECT_EQ(at_bad, 5);
      EXPECT_EQ(*peer, telemetry::Value(bad));
      EXPECT_EQ(*telemetry::Find(event.attributes, "network.peer.address"), telemetry::Value(bad));
    }
  }
  EXPECT_EQ(at_bad, 5);
  EXPECT_EQ(with_event, 1);
  EXPECT_TRUE(Transitions().empty());
}

}  // namespace
}  // namespace outbound::http
