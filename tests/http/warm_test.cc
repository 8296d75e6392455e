// SPDX-License-Identifier: Apache-2.0
// Client::Warm and Connected over the native pool and real sockets: a
// connection opened before the first call and used by it; why none could
// be opened (nothing listening, an untrusted certificate, HTTP/2 in plain
// text to a TLS server, a host gone silent, past the deadline on the
// clock); readiness latched once a connection has been usable.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "client_test_support.h"
#include "outbound/testing/black_hole.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

using testing::PortNothingListensOn;

class WarmTest : public ::testing::TestWithParam<Protocol>, public ClientTestBase {};

TEST_P(WarmTest, WarmOpensTheConnectionTheFirstCallUses) {
  Serve(Echo, GetParam());
  auto client = MakeClient();
  EXPECT_FALSE(client->Connected());
  Result<void> warmed = client->Warm().get();
  ASSERT_TRUE(warmed) << warmed.error().message();
  EXPECT_TRUE(client->Connected());
  EXPECT_EQ(server->connections_opened(), 1);
  EXPECT_EQ(server->request_count(), 0u);  // no request: only the connection
  // Warm again: ready at once, on the same connection.
  ASSERT_TRUE(client->Warm().get());
  auto response = client->Send(Request::Get("/after"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(server->connections_opened(), 1);
  EXPECT_TRUE(Attempts().size() == 1u);  // Warm is no attempt
}

INSTANTIATE_TEST_SUITE_P(Protocols, WarmTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11), [](const auto& p) {
                           return std::string(p.param == Protocol::kHttp2 ? "http2" : "http1");
                         });

class WarmFailureTest : public ::testing::Test, public ClientTestBase {};

TEST_F(WarmFailureTest, NothingListeningIsNamedAndNotConnected) {
  network.Add("payments", 8443, "127.0.0.1", PortNothingListensOn());
  auto client = MakeClient();
  Result<void> warmed = client->Warm().get();
  ASSERT_FALSE(warmed);
  EXPECT_EQ(warmed.error().kind(), ErrorKind::kTransport);
  EXPECT_EQ(warmed.error().message().rfind("payments:8443: ", 0), 0u) << warmed.error().message();
  EXPECT_NE(warmed.error().message().find("refused"), std::string::npos)
      << warmed.error().message();
  EXPECT_FALSE(client->Connected());
  // The breaker counts calls, not warm-ups.
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_TRUE(Transitions().empty());
}

TEST_F(WarmFailureTest, AnUntrustedServerIsNamedAndNotConnected) {
  testing::TestCA other;
  testing::FakeServer::Options options;
  options.tls = testing::ServerTls(other.IssueServer({"payments"}));
  options.handler = Echo;
  options.clock = &clock;
  auto started = testing::FakeServer::Start(std::move(options));
  ASSERT_TRUE(started) << started.error().message();
  server = std::move(*started);
  network.Add("payments", 8443, "127.0.0.1", server->port());
  auto client = MakeClient();
  Result<void> warmed = client->Warm().get();
  ASSERT_FALSE(warmed);
  EXPECT_EQ(warmed.error().kind(), ErrorKind::kTlsUntrusted) << warmed.error().message();
  EXPECT_FALSE(client->Connected());
}

// No SETTINGS ever comes: the server's TLS refuses the HTTP/2 preface and
// closes, or reads it as the start of a record it waits to complete, and
// Warm ends at its deadline.
TEST_F(WarmFailureTest, PlainHttp2ToATlsServerIsNotConnected) {
  Serve(Echo);
  Settings settings = PaymentsSettings();
  settings.base_url = "http://payments:8443";
  settings.tls.reset();
  settings.http2_prior_knowledge = true;
  auto client = MakeClient(settings);
  auto warmed = client->Warm(Context{.deadline = clock.Now() + std::chrono::seconds(2)});
  // The server's TLS may refuse the plain text at once, ending the warm
  // before its deadline's timer is looked for: either way, it ends (a
  // safety net of 10 s real time).
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (warmed.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready &&
         !clock.next_timer() && std::chrono::steady_clock::now() < give_up) {
  }
  if (warmed.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    clock.Advance(std::chrono::seconds(2));
  }
  Result<void> result = warmed.get();
  ASSERT_FALSE(result);
  EXPECT_TRUE(result.error().kind() == ErrorKind::kDeadline ||
              result.error().kind() == ErrorKind::kTransport)
      << result.error().message();
  EXPECT_FALSE(client->Connected());
}

TEST_F(WarmFailureTest, AHostGoneSilentEndsAtTheDeadlineOnTheClock) {
  auto hole = testing::BlackHole::Start();
  ASSERT_TRUE(hole) << hole.error().message();
  network.Add("payments", 8443, "127.0.0.1", (*hole)->port());
  auto client = MakeClient();
  Context context{.deadline = clock.Now() + std::chrono::seconds(2)};
  auto warmed = client->Warm(context);
  ASSERT_TRUE(clock.WaitForTimers(1));
  clock.Advance(std::chrono::seconds(2));
  Result<void> result = warmed.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline) << result.error().message();
  EXPECT_FALSE(client->Connected());
}

// The connection Warm opened goes with Warm's deadline: still opening, it
// held the client's one opening slot, and a later call waited behind it,
// never dialled, to its own deadline (the clock here never reaches it).
TEST_F(WarmFailureTest, AConnectionWarmGaveUpOnHoldsUpNoLaterCall) {
  auto hole = testing::BlackHole::Start();
  ASSERT_TRUE(hole) << hole.error().message();
  network.Add("payments", 8443, "127.0.0.1", (*hole)->port());
  auto client = MakeClient();
  auto warmed = client->Warm({.deadline = clock.Now() + std::chrono::seconds(2)});
  ASSERT_TRUE(clock.WaitForTimers(1));
  clock.Advance(std::chrono::seconds(2));
  Result<void> result = warmed.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline) << result.error().message();

  Serve(Echo);  // the dependency answers now, at another address
  auto call = client->SendAsync(Request::Get("/after"));
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the call waited behind Warm's connection";
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "/after");
}

TEST_F(WarmFailureTest, ConnectedStaysOnceTheConnectionCloses) {
  Serve(Echo);
  auto client = MakeClient();
  ASSERT_TRUE(client->Warm().get());
  server->Stop();  // GOAWAY, and the connection closed
  server.reset();
  EXPECT_TRUE(client->Connected());
  // The dependency is back, elsewhere: a call finds it (the closed
  // connection is left, whenever the client learns of its end).
  Serve(Echo);
  ASSERT_TRUE(client->Warm().get());
  auto response = client->Send(Request::Get("/back"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(server->connections_opened(), 1);
  EXPECT_TRUE(client->Connected());
}

}  // namespace
}  // namespace outbound::http
