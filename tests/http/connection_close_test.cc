// SPDX-License-Identifier: Apache-2.0
// How the client ends a connection it no longer wants (the client goes, the
// connection idles or ages out): HTTP/2 says GOAWAY with NO_ERROR first
// (RFC 9113 §6.8), then TLS its close_notify alert (RFC 8446 §6.1), over
// HTTP/2 and HTTP/1.1.
#include <gtest/gtest.h>

#include <chrono>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class ConnectionCloseTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {
 protected:
  // Waits (a safety net of 10 s real time) until the server has counted
  // `n` close_notify alerts.
  bool ServerSawCloseNotifies(int n) {
    return server->WaitFor([n](const testing::FakeServer& s) { return s.close_notifies() >= n; },
                           std::chrono::seconds(10));
  }

  // The GOAWAYs a server of this case's protocol sees for `n` connections
  // the client closed: one each over HTTP/2, none over HTTP/1.1.
  static int GoawaysFor(int n) { return GetParam() == Protocol::kHttp2 ? n : 0; }

  // The server read the close_notify after the GOAWAY, on the same
  // connection: once it counted the alerts, it has counted the frames.
  void ExpectGracefulEnds(int n) {
    EXPECT_TRUE(ServerSawCloseNotifies(n));
    EXPECT_EQ(server->close_notifies(), n);
    EXPECT_EQ(server->goaways_from_client(), GoawaysFor(n));
    EXPECT_EQ(server->goaway_errors_from_client(), 0);
  }
};

TEST_P(ConnectionCloseTest, AClientThatGoesEndsItsConnectionGracefully) {
  Serve([](const ServerRequest&) { return Reply::Ok("fine"); }, GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(server->close_notifies(), 0);
  EXPECT_EQ(server->goaways_from_client(), 0);
  client.reset();
  ExpectGracefulEnds(1);
}

// A connection the client closes while it lives (idle for 90 s) ends the
// same way.
TEST_P(ConnectionCloseTest, AConnectionClosedWhenIdleEndsGracefully) {
  Serve([](const ServerRequest&) { return Reply::Ok("fine"); }, GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response) << response.error().message();
  // The client arms its idle timer once the call has left it, on its loop.
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + std::chrono::seconds(90)));
  clock.Advance(std::chrono::seconds(90));
  ExpectGracefulEnds(1);
  EXPECT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 0; }));
}

// So does one past its maximum age, once the call on it has ended; the
// next call goes on a new connection.
TEST_P(ConnectionCloseTest, AConnectionPastItsAgeEndsGracefully) {
  Serve([](const ServerRequest&) { return Reply::Ok("fine"); }, GetParam());
  Settings settings = PaymentsSettings();
  settings.max_connection_age = std::chrono::minutes(1);
  auto client = MakeClient(settings);
  ASSERT_TRUE(client->Send(Request::Get("/")));
  // Past any connection's age (below 1.1 minutes) and short of the idle
  // close's 90 s.
  clock.Advance(std::chrono::seconds(70));
  ExpectGracefulEnds(1);
  auto next = client->Send(Request::Get("/"));
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(server->connections_opened(), 2);
}

// A connection that passes its age with a call on it closes once the call
// ends, which the client reads in the middle of a read: the goodbye waits
// for the read to return, and is said all the same.
TEST_P(ConnectionCloseTest, AConnectionBusyAtItsAgeEndsGracefullyOnceItsCallEnds) {
  Serve(
      [](const ServerRequest& r) {
        if (r.target != "/late") return Reply::Ok("fine");
        return Reply::Ok("late").DelayHeaders(std::chrono::seconds(100));
      },
      GetParam());
  Settings settings = PaymentsSettings();
  settings.max_connection_age = std::chrono::minutes(1);
  settings.timeout = std::chrono::hours(1);
  settings.attempt_timeout = std::chrono::hours(1);
  auto client = MakeClient(settings);
  // A call answered first: the connection's age is armed once its call is
  // back (the server may see a request before the client has armed it).
  ASSERT_TRUE(client->Send(Request::Get("/")));
  auto call = client->SendAsync(Request::Get("/late"));
  ASSERT_TRUE(server->WaitForRequests(2));  // the answer's delay is armed
  clock.Advance(std::chrono::seconds(70));  // past its age: drained, busy
  EXPECT_EQ(server->close_notifies(), 0);
  EXPECT_EQ(server->goaways_from_client(), 0);
  clock.Advance(std::chrono::seconds(30));  // the answer
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "late");
  ExpectGracefulEnds(1);
}

INSTANTIATE_TEST_SUITE_P(Protocols, ConnectionCloseTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11), ProtocolName);

}  // namespace
}  // namespace outbound::http
