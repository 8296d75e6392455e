// SPDX-License-Identifier: Apache-2.0
// The client against Node 20's own HTTP/1.1 server over TLS
// (tests/peers/h1_server.js), which says in each answer that it closes a
// connection idle for 5 s (`Keep-Alive: timeout=5`; Node 20.20 waits a
// second more before it does). The client runs on a
// ManualClock moved between calls (Node's own timers are not involved, a
// real second never passes): it uses the connection again within four
// seconds of an answer, and past them closes it itself, so that it never
// writes a request as Node closes the connection (a POST written then
// could not be sent again).
#include <gtest/gtest.h>

#include <string>

#include "outbound/testing/manual_clock.h"
#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

class NodeKeepAliveTest : public PeerTestBase, public ::testing::Test {
 protected:
  NodeKeepAliveTest() { runtime.clock = &clock; }

  testing::ManualClock clock;
};

TEST_F(NodeKeepAliveTest, AnIdleConnectionIsClosedByTheClientBeforeNodesKeepAliveTimeout) {
  StartPeer("h1_server.js");
  http::Settings settings = PaymentsSettings();
  settings.timeout = hours(2);  // the clock moves between calls
  settings.attempt_timeout = hours(1);
  auto client = MakeClient(settings);

  auto first = client->Send(Request::Get("/"));
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->version, "1.1");
  // What the client goes by, as Node says it.
  EXPECT_EQ(first->headers.Find("keep-alive"), "timeout=5");

  clock.Advance(milliseconds(3999));
  ASSERT_TRUE(client->Send(Request::Post("/charges", "one")));
  EXPECT_EQ(peer->Stats()["connections"].get<int>(), 1);

  // Four seconds after the last answer the client closes the connection,
  // before Node's five (and Node's own close), with no call to make.
  clock.Advance(seconds(4));
  EXPECT_TRUE(WaitUntil([&] { return peer->Stats()["open"].get<int>() == 0; }))
      << peer->Stats().dump();
  EXPECT_EQ(peer->Stats()["client_closed"].get<int>(), 1);  // not Node's close
  ASSERT_TRUE(client->Send(Request::Post("/charges", "two")));
  nlohmann::json stats = peer->Stats();
  SCOPED_TRACE(log->Summary() + "; server " + stats.dump());
  EXPECT_EQ(stats["connections"].get<int>(), 2);
  EXPECT_EQ(stats["requests"].get<int>(), 3);
  EXPECT_EQ(stats["answered"].get<int>(), 3);
  EXPECT_EQ(log->attempts(), 3);  // none sent twice
}

}  // namespace
}  // namespace outbound::peers
