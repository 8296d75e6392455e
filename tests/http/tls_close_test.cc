// SPDX-License-Identifier: Apache-2.0
// How the client ends a TLS connection: with a close_notify alert first
// (RFC 8446 §6.1), over HTTP/2 and HTTP/1.1, when the client goes and
// when it closes a connection it no longer wants.
#include <gtest/gtest.h>

#include <chrono>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class TlsCloseTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {
 protected:
  // Waits (a safety net of 10 s real time) until the server has counted
  // `n` close_notify alerts.
  bool ServerSawCloseNotifies(int n) {
    return server->WaitFor([n](const testing::FakeServer& s) { return s.close_notifies() >= n; },
                           std::chrono::seconds(10));
  }
};

TEST_P(TlsCloseTest, AClientThatGoesEndsItsConnectionWithACloseNotify) {
  Serve([](const ServerRequest&) { return Reply::Ok("fine"); }, GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(server->close_notifies(), 0);
  client.reset();
  EXPECT_TRUE(ServerSawCloseNotifies(1));
  EXPECT_EQ(server->close_notifies(), 1);
}

// A connection the client closes while it lives (idle for 90 s) says
// close_notify too.
TEST_P(TlsCloseTest, AConnectionClosedWhenIdleEndsWithACloseNotify) {
  Serve([](const ServerRequest&) { return Reply::Ok("fine"); }, GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response) << response.error().message();
  // The client arms its idle timer once the call has left it, on its loop.
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + std::chrono::seconds(90)));
  clock.Advance(std::chrono::seconds(90));
  EXPECT_TRUE(ServerSawCloseNotifies(1));
  EXPECT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 0; }));
  EXPECT_EQ(server->close_notifies(), 1);
}

INSTANTIATE_TEST_SUITE_P(Protocols, TlsCloseTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11), ProtocolName);

}  // namespace
}  // namespace outbound::http
