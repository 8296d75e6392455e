// SPDX-License-Identifier: Apache-2.0
// Settings::max_connection_age against Node 20's own http2 server
// (tests/peers/h2_server.js), which counts the connections it accepts. The
// client runs on a ManualClock moved across the age between calls (Node's
// own timers are not involved): each age passed is one more connection at
// Node, no call fails or is sent twice, and a call in flight when its
// connection ages ends whole on it while the next goes to a new one.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>

#include "outbound/testing/manual_clock.h"
#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

// 66 s is past any connection's age with a maximum of 60 s (the jitter
// keeps each below 1.1 × 60 s).
constexpr auto kAge = seconds(60);
constexpr auto kPastAnyAge = seconds(66);

class NodeMaxAgeTest : public PeerTestBase, public ::testing::Test {
 protected:
  NodeMaxAgeTest() { runtime.clock = &clock; }

  http::Settings AgedSettings() {
    http::Settings s = PaymentsSettings();
    s.max_connection_age = kAge;
    s.timeout = hours(2);  // the clock crosses ages mid-call
    s.attempt_timeout = hours(1);
    return s;
  }

  testing::ManualClock clock;
};

TEST_F(NodeMaxAgeTest, EachAgePassedIsANewConnectionAndNoCallFails) {
  StartPeer("h2_server.js");
  auto client = MakeClient(AgedSettings());
  constexpr int kRounds = 5;
  constexpr int kCallsPerRound = 20;
  LoadReport report;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kCallsPerRound; ++i) report.Add(client->Send(Request::Get("/")));
    clock.Advance(kPastAnyAge);
  }
  nlohmann::json stats = peer->Stats();
  SCOPED_TRACE(report.Summary() + "; " + log->Summary() + "; server " + stats.dump());
  EXPECT_EQ(report.calls, kRounds * kCallsPerRound);
  EXPECT_EQ(report.failed(), 0);
  EXPECT_EQ(log->attempts(), kRounds * kCallsPerRound);  // none sent twice
  EXPECT_EQ(stats["sessions"].get<int>(), kRounds);
  EXPECT_EQ(stats["answered"].get<int>(), kRounds * kCallsPerRound);
  // The last connection, idle past its age, has closed too; each said
  // GOAWAY with NO_ERROR before it closed.
  EXPECT_TRUE(WaitUntil([&] { return peer->Stats()["open"].get<int>() == 0; }))
      << peer->Stats().dump();
  stats = peer->Stats();
  EXPECT_EQ(stats["client_goaways"].get<int>(), kRounds) << stats.dump();
  EXPECT_EQ(stats["client_goaway_errors"].get<int>(), 0) << stats.dump();
}

// /held answers 5 bytes of its body, and the rest when the test releases
// it: the connection passes its age with that stream open.
TEST_F(NodeMaxAgeTest, ACallInFlightEndsWholeOnTheAgedConnection) {
  StartPeer("h2_server.js");
  auto client = MakeClient(AgedSettings());
  ASSERT_TRUE(client->Send(Request::Get("/")));
  auto held = client->SendAsync(Request::Get("/held"));
  ASSERT_TRUE(WaitUntil([&] { return peer->Stats()["held"].get<int>() == 1; }));
  clock.Advance(kPastAnyAge);

  auto next = client->Send(Request::Get("/"));
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(peer->Stats()["sessions"].get<int>(), 2);
  EXPECT_EQ(peer->Stats()["open"].get<int>(), 2);  // the aged one waits for /held

  ASSERT_EQ(peer->Command("release")["released"].get<int>(), 1);
  ASSERT_EQ(held.wait_for(seconds(10)), std::future_status::ready);
  auto response = held.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "hello" + std::string(95, 'x'));
  EXPECT_TRUE(WaitUntil([&] { return peer->Stats()["open"].get<int>() == 1; }))
      << peer->Stats().dump();
  EXPECT_EQ(log->attempts(), 3);
}

// Off by default: one connection, the clock moving a minute between calls
// for two hours.
TEST_F(NodeMaxAgeTest, WithoutAMaximumAgeOneConnectionServesForHours) {
  StartPeer("h2_server.js");
  auto client = MakeClient(PaymentsSettings());
  for (int i = 0; i < 120; ++i) {
    auto response = client->Send(Request::Get("/"));
    ASSERT_TRUE(response) << response.error().message();
    clock.Advance(seconds(60));
  }
  EXPECT_EQ(peer->Stats()["sessions"].get<int>(), 1);
}

}  // namespace
}  // namespace outbound::peers
