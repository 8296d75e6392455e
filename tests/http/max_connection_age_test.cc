// SPDX-License-Identifier: Apache-2.0
// Settings::max_connection_age on the native transport, against the kit's
// FakeServer on loopback in fake time: a connection past its age is
// drained (what it carries finishes on it, the next attempts go to a new
// connection, it closes once idle) and no attempt fails or is sent again
// for it; off by default; its jitter stays within ±10 %.
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

constexpr auto kAge = seconds(60);

class MaxConnectionAgeTest : public ::testing::Test, public ClientTestBase {
 protected:
  // Serves payments:8443: "/slow" answers once the server's own clock
  // (not the client's) has moved a second, every other path at once with
  // its path, so a test holds a call in flight across the client's age.
  void ServeWithSlowPath(Protocol protocol) {
    testing::ServerTls tls(ca.IssueServer({"payments"}));
    if (protocol == Protocol::kHttp11) tls.alpn = {"http/1.1"};
    auto started =
        testing::FakeServer::Start({.tls = std::move(tls),
                                    .handler =
                                        [](const ServerRequest& r) {
                                          if (r.target == "/slow")
                                            return Reply::Ok("slow").DelayHeaders(seconds(1));
                                          return Reply::Ok(r.target);
                                        },
                                    .clock = &server_clock});
    ASSERT_TRUE(started) << started.error().message();
    server = std::move(*started);
    network.Add("payments", 8443, "127.0.0.1", server->port());
  }

  // The defaults with a maximum age, and a call's time long enough that
  // moving the clock across the age times nothing out.
  Settings AgedSettings() {
    Settings s = PaymentsSettings();
    s.max_connection_age = kAge;
    s.timeout = hours(2);
    s.attempt_timeout = hours(1);
    return s;
  }

  // The connection the server saw request `i` (0-based) on.
  int ConnectionOf(std::size_t i) { return server->requests().at(i).connection_id; }

  void ExpectEveryAttemptAnsweredOnce(std::size_t calls) {
    std::vector<AttemptRecord> seen = Attempts();
    ASSERT_EQ(seen.size(), calls);  // none sent again
    for (const AttemptRecord& a : seen) {
      EXPECT_EQ(a.status, 200) << a.error_message;
      EXPECT_FALSE(a.error) << a.error_message;
    }
  }

  testing::ManualClock server_clock;
};

TEST_F(MaxConnectionAgeTest, IsOffByDefaultAndOneConnectionServesForHours) {
  EXPECT_FALSE(DefaultSettings().max_connection_age);
  Serve([](const ServerRequest& r) { return Reply::Ok(r.target); });
  auto client = MakeClient();
  // A call a minute for three hours: never idle long enough to close.
  for (int i = 0; i < 180; ++i) {
    auto response = client->Send(Request::Get(NumberedPath(i)));
    ASSERT_TRUE(response) << response.error().message();
    clock.Advance(seconds(60));
  }
  EXPECT_EQ(server->connections_opened(), 1);
  EXPECT_EQ(server->connections_open(), 1);
}

TEST_F(MaxConnectionAgeTest, Http2CallInFlightFinishesOnTheOldConnectionTheNextOpensANewOne) {
  ServeWithSlowPath(Protocol::kHttp2);
  auto client = MakeClient(AgedSettings());
  auto first = client->Send(Request::Get("/0"));
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->version, "2");

  auto slow = client->SendAsync(Request::Get("/slow"));
  ASSERT_TRUE(server->WaitForRequests(2));
  clock.Advance(kAge);  // the connection is past its age, its stream still open

  auto next = client->Send(Request::Get("/1"));
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(server->connections_opened(), 2);
  EXPECT_EQ(ConnectionOf(1), 1);  // /slow
  EXPECT_EQ(ConnectionOf(2), 2);  // /1
  // The old connection stays while its stream is open.
  EXPECT_EQ(server->connections_open(), 2);

  server_clock.Advance(seconds(1));
  auto slow_response = slow.get();
  ASSERT_TRUE(slow_response) << slow_response.error().message();
  EXPECT_EQ(slow_response->body, "slow");
  // Its last stream over, the old connection closes.
  EXPECT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 1; }));

  // The new one carries what follows.
  auto after = client->Send(Request::Get("/2"));
  ASSERT_TRUE(after) << after.error().message();
  EXPECT_EQ(ConnectionOf(3), 2);
  EXPECT_EQ(server->connections_opened(), 2);
  ExpectEveryAttemptAnsweredOnce(4);
}

// A stream cut short on a drained connection (its attempt timed out) is
// its end as well: the connection closes once nothing is left on it.
TEST_F(MaxConnectionAgeTest, ADrainedConnectionClosesOnceItsLastStreamIsCut) {
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  Settings settings = AgedSettings();
  settings.attempt_timeout = seconds(100);
  settings.max_attempts = 1;
  auto client = MakeClient(settings);
  auto hung = client->SendAsync(Request::Get("/hang"));
  ASSERT_TRUE(server->WaitForRequests(1));
  clock.Advance(kAge);
  EXPECT_EQ(server->connections_open(), 1);  // its stream is still open
  clock.Advance(seconds(40));
  auto result = hung.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline) << result.error().message();
  EXPECT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 0; }));
  EXPECT_EQ(server->connections_opened(), 1);
}

// HTTP/1.1 within max_connections 1: the call queued behind the one in
// flight waits for it, and goes on a new connection once the old one,
// past its age, has closed.
TEST_F(MaxConnectionAgeTest, Http11ExchangeInFlightFinishesThenANewConnectionWithinMaxConnections) {
  ServeWithSlowPath(Protocol::kHttp11);
  Settings settings = AgedSettings();
  settings.max_connections = 1;
  auto client = MakeClient(settings);
  auto first = client->Send(Request::Get("/0"));
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->version, "1.1");

  auto slow = client->SendAsync(Request::Get("/slow"));
  ASSERT_TRUE(server->WaitForRequests(2));
  clock.Advance(kAge);
  auto queued = client->SendAsync(Request::Get("/1"));

  server_clock.Advance(seconds(1));
  auto slow_response = slow.get();
  ASSERT_TRUE(slow_response) << slow_response.error().message();
  EXPECT_EQ(slow_response->body, "slow");
  auto queued_response = queued.get();
  ASSERT_TRUE(queued_response) << queued_response.error().message();
  EXPECT_EQ(queued_response->body, "/1");

  EXPECT_EQ(ConnectionOf(0), 1);
  EXPECT_EQ(ConnectionOf(1), 1);  // /slow, on the old connection
  EXPECT_EQ(ConnectionOf(2), 2);  // /1, on a new one
  EXPECT_EQ(server->connections_opened(), 2);
  EXPECT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 1; }));
  ExpectEveryAttemptAnsweredOnce(3);
}

// An idle connection past its age closes at once; the next call opens
// another, which is kept until it too is past its age.
TEST_F(MaxConnectionAgeTest, EachNewConnectionLivesItsOwnAge) {
  Serve([](const ServerRequest& r) { return Reply::Ok(r.target); });
  auto client = MakeClient(AgedSettings());
  for (int i = 0; i < 6; ++i) {
    auto response = client->Send(Request::Get(NumberedPath(i)));
    ASSERT_TRUE(response) << response.error().message();
    clock.Advance(seconds(30));  // two calls per connection's 60 s
  }
  EXPECT_EQ(server->connections_opened(), 3);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(ConnectionOf(i), static_cast<int>(i / 2) + 1);
  ExpectEveryAttemptAnsweredOnce(6);
}

// The age is drawn from [0.9, 1.1) × max_connection_age: the Runtime's
// random at its lowest ends a connection at 54 s, at its highest
// (0.9999) at 65.9988 s; neither a moment earlier.
TEST_F(MaxConnectionAgeTest, TheJitterStaysWithinTenPercent) {
  struct Case {
    double uniform;
    Duration age;
  };
  for (Case c : {Case{0.0, seconds(54)}, Case{0.9999, milliseconds(65'999)}}) {
    SCOPED_TRACE(c.uniform);
    FixedRandom drawn(c.uniform);
    runtime.random = &drawn;
    Serve([](const ServerRequest& r) { return Reply::Ok(r.target); });
    auto client = MakeClient(AgedSettings());
    ASSERT_TRUE(client->Send(Request::Get("/0")));
    clock.Advance(c.age - milliseconds(1));
    ASSERT_TRUE(client->Send(Request::Get("/1")));
    EXPECT_EQ(server->connections_opened(), 1);
    clock.Advance(milliseconds(1));
    ASSERT_TRUE(client->Send(Request::Get("/2")));
    EXPECT_EQ(server->connections_opened(), 2);
    client.reset();
    runtime.random = &random;
  }
}

TEST_F(MaxConnectionAgeTest, ANonPositiveAgeIsRefused) {
  EXPECT_TRUE(CheckMaxConnectionAge(std::nullopt));
  EXPECT_TRUE(CheckMaxConnectionAge(seconds(1)));
  EXPECT_FALSE(CheckMaxConnectionAge(Duration::zero()));
  Settings settings = PaymentsSettings();
  settings.max_connection_age = seconds(-1);
  auto client = Client::Create(runtime, settings);
  ASSERT_FALSE(client);
  EXPECT_NE(client.error().message().find("Settings.max_connection_age: must be positive"),
            std::string::npos)
      << client.error().message();
}

}  // namespace
}  // namespace outbound::http
