// SPDX-License-Identifier: Apache-2.0
// Settings::balancing on the native transport: three replicas of payments
// (the kit's FakeServers on loopback, behind one name on the kit's
// network), in fake time. Calls spread over every endpoint by power of two
// choices; an endpoint that refuses or answers 503 is ejected while the
// others serve, with no failed call and the breaker closed; a retry goes
// to another endpoint; an ejected endpoint is probed back and ejected
// longer each time; the name is resolved again, so an endpoint added gets
// calls and one removed gets none once its connections drain.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "balancing_test_support.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

using testing::PortNothingListensOn;

class BalancingTest : public BalancingTestBase {};

TEST_F(BalancingTest, IsOffByDefaultAndThenOneConnectionGoesToTheFirstEndpointThatAnswers) {
  EXPECT_FALSE(DefaultSettings().balancing);
  StartReplica(Echo);
  StartReplica(Echo);
  Name({PortNothingListensOn(), replicas[0]->port(), replicas[1]->port()});
  auto client = MakeClient();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client->Send(Request::Get(NumberedPath(i))));
  // The refused address is passed over; one connection carries it all.
  EXPECT_EQ(replicas[0]->request_count(), 20u);
  EXPECT_EQ(replicas[0]->connections_opened(), 1);
  EXPECT_EQ(replicas[1]->request_count(), 0u);
}

TEST_F(BalancingTest, SpreadsCallsOverEveryEndpointWithOneHttp2ConnectionEach) {
  for (int i = 0; i < 3; ++i) StartReplica(Echo);
  Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
  auto client = MakeClient(BalancedSettings());
  std::vector<int> statuses = Call(*client, 600);
  EXPECT_EQ(Count(statuses, 200), 600);
  for (const auto& replica : replicas) {
    // A third each, give or take what chance does with 600 draws.
    EXPECT_GE(replica->request_count(), 120u);
    EXPECT_EQ(replica->connections_opened(), 1);
  }
}

// Calls carried to a connection that has no room for them yet (one stream
// at a time here) go back at once when it gets a GOAWAY, and go on a new
// connection, rather than wait for its last stream (one the server holds)
// and then fail.
TEST_F(BalancingTest, CallsWaitingOnAConnectionThatGoesAwayGoOnAnother) {
  testing::ServerTls tls(ca.IssueServer({"payments"}));
  std::atomic<int> seen{0};
  auto started = testing::FakeServer::Start(
      {.tls = std::move(tls),
       .handler = [&](const ServerRequest& r) { return seen++ == 0 ? Reply::Hang() : Echo(r); },
       .clock = &clock,
       .goaway_after_streams = 1,
       .max_concurrent_streams = 1});
  ASSERT_TRUE(started) << started.error().message();
  replicas.push_back(std::move(*started));
  Name({replicas[0]->port()});
  auto client = MakeClient(BalancedSettings());
  auto held = client->SendAsync(Request::Get("/held"));
  auto second = client->SendAsync(Request::Get("/2"));
  auto third = client->SendAsync(Request::Get("/3"));
  // A safety net of 10 s real time: the clock never moves, so the held
  // stream never ends, and a call left waiting behind it never would.
  for (auto* call : {&second, &third}) {
    ASSERT_EQ(call->wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << "a call still waits on the connection that went away";
    auto answer = call->get();
    ASSERT_TRUE(answer) << answer.error().message();
    EXPECT_EQ(answer->status, 200);
  }
  EXPECT_GE(replicas[0]->connections_opened(), 2);  // each goes away after one stream
  EXPECT_EQ(held.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
}

TEST_F(BalancingTest, AnEndpointInTheSettingsIsCalledInsteadOfTheName) {
  StartReplica(Echo);
  StartReplica(Echo);
  Name({replicas[0]->port()});
  Settings s = BalancedSettings();
  s.balancing->endpoints = {{"127.0.0.1", replicas[1]->port()}};
  auto client = MakeClient(s);
  EXPECT_EQ(Count(Call(*client, 20), 200), 20);
  EXPECT_EQ(replicas[0]->request_count(), 0u);
  EXPECT_EQ(replicas[1]->request_count(), 20u);
}

// HTTP/1.1 carries one attempt per connection: each endpoint has its own
// pool, up to max_connections, and the calls still spread over all three.
TEST_F(BalancingTest, OnHttp11EachEndpointHasAPoolOfItsOwnWithinMaxConnections) {
  for (int i = 0; i < 3; ++i) StartReplica(Echo, {"http/1.1"});
  Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
  Settings settings = BalancedSettings();
  settings.max_connections = 2;
  auto client = MakeClient(std::move(settings));
  EXPECT_EQ(Count(Call(*client, 300, 8), 200), 300);
  for (const auto& replica : replicas) {
    EXPECT_GE(replica->request_count(), 60u);
    EXPECT_GE(replica->connections_opened(), 1);
    EXPECT_LE(replica->connections_opened(), 2);
  }
}

// A burst of calls to one HTTP/1.1 replica, reached before the client
// knows the protocol: the replica answers each a second after it came,
// with its target (or its body), and the client may have three
// connections.
class Http11BurstTest : public BalancingTest {
 protected:
  Http11BurstTest() {
    StartReplica(
        [this](const ServerRequest& r) {
          return Reply::Ok(echo_body ? r.body : r.target).DelayHeaders(seconds(1));
        },
        {"http/1.1"});
    Name({replicas[0]->port()});
  }
  Settings ThreeConnections() {
    Settings settings = BalancedSettings();
    settings.max_connections = 3;
    return settings;
  }
  // Three GETs of "/0", "/1" and "/2", at once.
  std::vector<std::future<Result<Response>>> Burst(Client& client) {
    std::vector<std::future<Result<Response>>> calls;
    for (int i = 0; i < 3; ++i) {
      calls.push_back(client.SendAsync(Request::Get("/" + std::to_string(i))));
    }
    return calls;
  }
  std::atomic<bool> echo_body{false};
};

// A burst carried to an endpoint's first connection while its protocol
// was unknown: once it opens as HTTP/1.1 (one request at a time), the rest
// go back and open connections of their own, within max_connections,
// rather than wait their turn on the first one.
TEST_F(Http11BurstTest, ABurstBeforeTheFirstHandshakeGetsAConnectionEach) {
  auto client = MakeClient(ThreeConnections());
  auto calls = Burst(*client);
  ASSERT_TRUE(replicas[0]->WaitForRequests(3)) << "the burst waits its turn on one connection";
  EXPECT_EQ(replicas[0]->connections_opened(), 3);
  clock.Advance(seconds(1));
  for (int i = 0; i < 3; ++i) {
    auto response = calls[i].get();
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "/" + std::to_string(i));
    // One carried to the first connection and sent back from it, unsent,
    // was handed over once more (no backoff, no budget spent).
    EXPECT_LE(response->attempts, 2);
  }
  EXPECT_TRUE(Transitions().empty());
}

// Bodies that can be read only once are not sent back from the busy
// HTTP/1.1 connection (they may not be sent again): they wait their turn
// on it, and each is sent there, once.
TEST_F(Http11BurstTest, BodiesReadOnceWaitTheirTurnOnTheFirstConnection) {
  echo_body = true;
  auto client = MakeClient(ThreeConnections());
  std::vector<std::future<Result<Response>>> calls;
  for (int i = 0; i < 3; ++i) {
    auto once = std::make_shared<std::string>("body " + std::to_string(i));
    calls.push_back(
        client->SendAsync(Request::Post("/").StreamBodyFromOnce([once](std::span<char> buffer) {
          std::size_t n = std::min(buffer.size(), once->size());
          once->copy(buffer.data(), n);
          once->erase(0, n);
          return Result<std::size_t>(n);
        })));
  }
  for (std::size_t i = 1; i <= 3; ++i) {
    ASSERT_TRUE(replicas[0]->WaitForRequests(i));
    clock.Advance(seconds(1));
  }
  for (int i = 0; i < 3; ++i) {
    auto response = calls[i].get();
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "body " + std::to_string(i));
    EXPECT_EQ(response->attempts, 1);
  }
}

// An attempt a connection sent back unsent (it opened HTTP/1.1 and busy)
// is sent again at once and is no retry: adaptive concurrency takes its
// call's answer for a latency sample, not a drop that halves the limit.
// Whether the burst reaches the connection before its handshake ends is
// the machine's timing: a burst that did not is tried again, with a new
// client, a few times.
TEST_F(Http11BurstTest, AnAttemptSentBackUnsentIsNoDropForAdaptiveConcurrency) {
  std::size_t requests = 0;
  for (int round = 0; round < 20; ++round) {
    testing::InMemoryTelemetry recorded{DefaultRandom()};
    runtime.telemetry = recorded.telemetry();
    Settings settings = ThreeConnections();
    settings.adaptive_concurrency = AdaptiveConcurrency{.sample_window = seconds(1)};
    auto client = MakeClient(std::move(settings));
    auto calls = Burst(*client);
    ASSERT_TRUE(replicas[0]->WaitForRequests(requests += 3));
    clock.Advance(seconds(1));  // the answers, and the window's end
    int sent_back = 0;
    for (auto& call : calls) {
      auto response = call.get();
      ASSERT_TRUE(response) << response.error().message();
      sent_back += response->attempts - 1;
    }
    if (sent_back == 0) continue;  // the scenario did not happen
    // One more call a window later: the window the burst's ends fell in
    // is closed, whichever of them closed the one before.
    auto next = client->SendAsync(Request::Get("/next"));
    ASSERT_TRUE(replicas[0]->WaitForRequests(++requests));
    clock.Advance(seconds(1));
    ASSERT_TRUE(next.get());
    EXPECT_GE(recorded.Value("outbound.concurrency.limit"), 20);  // the initial limit: not halved
    return;
  }
  FAIL() << "in 20 bursts, none reached the connection before its handshake ended";
}

TEST_F(BalancingTest, AnEndpointThatRefusesIsEjectedWhileTheOthersServeEveryCall) {
  StartReplica(Echo);
  StartReplica(Echo);
  Name({replicas[0]->port(), PortNothingListensOn(), replicas[1]->port()});
  auto client = MakeClient(BalancedSettings());
  EXPECT_EQ(Count(Call(*client, 200), 200), 200);
  // Five refused dials in a row eject it (the attempts waiting on one dial
  // count once), and every refused attempt's call went on elsewhere.
  int failed = FailedAttempts();
  EXPECT_GE(failed, 5);
  EXPECT_EQ(Attempts().size(), 200u + static_cast<std::size_t>(failed));
  // Out for 30 s (the clock moves only by backoffs): none of 1000 more
  // calls is sent there.
  EXPECT_EQ(Count(Call(*client, 1000), 200), 1000);
  EXPECT_EQ(FailedAttempts(), failed);
  EXPECT_EQ(Attempts().size(), 1200u + static_cast<std::size_t>(failed));
  EXPECT_TRUE(Transitions().empty());  // the breaker never opened
}

TEST_F(BalancingTest, AnEndpointThatAnswers503IsEjectedAndItsCallsRetriedElsewhere) {
  StartReplica(Echo);
  StartReplica([](const ServerRequest&) { return Reply::Status(503); });
  StartReplica(Echo);
  Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
  auto client = MakeClient(BalancedSettings());
  std::vector<int> statuses = Call(*client, 1000);
  EXPECT_EQ(Count(statuses, 200), 1000);
  EXPECT_TRUE(Transitions().empty());
  std::size_t bad = replicas[1]->request_count();
  EXPECT_GE(bad, 5u);
  EXPECT_LE(bad, 10u);  // 1 % of 1000
  // A 503's call was sent again to another endpoint, which answered.
  EXPECT_EQ(Attempts().size(), 1000u + bad);
}

// The replica behind a proxy whose app is gone: the proxy answers 502 at
// once while the healthy replicas take 20 ms, so with 32 calls in flight
// the first answers back are a run of the one replica's failures. Its
// ejection takes them: the breaker, at five failures in a row, stays
// closed, and each call whose attempt failed is answered elsewhere.
// (Seen behind three nginx grpc_pass sidecars: 2 984 of 3 000 calls
// rejected by an open breaker, over and over as each ejection ended.)
TEST_F(BalancingTest, OneReplicasFastFailuresDoNotOpenTheBreaker) {
  auto slow_echo = [](const ServerRequest& request) {
    return Echo(request).DelayHeaders(milliseconds(20));
  };
  StartReplica(slow_echo);
  StartReplica([](const ServerRequest&) { return Reply::Status(502); });
  StartReplica(slow_echo);
  Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
  auto client = MakeClient(BalancedSettings());
  std::vector<int> statuses = Call(*client, 640, 32);
  EXPECT_EQ(Count(statuses, 200), 640);
  EXPECT_TRUE(Transitions().empty());
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  std::size_t bad = replicas[1]->request_count();
  EXPECT_GE(bad, 5u);
  EXPECT_EQ(Attempts().size(), 640u + bad);
}

TEST_F(BalancingTest, AnEndpointThatHangsIsEjectedByItsAttemptTimeouts) {
  testing::ManualClock never;  // the hanging replica's: never moved
  StartReplica(Echo);
  auto hung_started = testing::FakeServer::Start(
      {.tls = testing::ServerTls(ca.IssueServer({"payments"})),
       .handler = [](const ServerRequest&) { return Reply::Ok().DelayHeaders(hours(1)); },
       .clock = &never});
  ASSERT_TRUE(hung_started);
  testing::FakeServer& hung = **hung_started;
  StartReplica(Echo);
  Name({replicas[0]->port(), hung.port(), replicas[1]->port()});
  Settings s = BalancedSettings();
  s.attempt_timeout = seconds(1);
  auto client = MakeClient(s);
  // One call at a time: when the hanging replica has the attempt, the
  // clock moves by the attempt timeout; otherwise only to backoffs.
  std::size_t seen_hung = 0;
  for (int i = 0; i < 300; ++i) {
    auto answer = client->SendAsync(Request::Get(NumberedPath(i)));
    while (answer.wait_for(milliseconds(1)) != std::future_status::ready) {
      if (hung.request_count() > seen_hung) {
        ++seen_hung;
        ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + seconds(1)));
        clock.Advance(seconds(1));
      } else if (clock.WaitForTimerBy(clock.Now() + milliseconds(20), milliseconds(1))) {
        clock.AdvanceTo(*clock.next_timer());
      }
    }
    Result<Response> r = answer.get();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->status, 200);
  }
  // Five timeouts in a row eject it; 30 s have not passed (5 s of timeouts
  // and the backoffs).
  EXPECT_EQ(hung.request_count(), 5u);
  EXPECT_TRUE(Transitions().empty());
}

TEST_F(BalancingTest, AnEjectedEndpointIsProbedBackAndEjectedTwiceAsLongTheSecondTime) {
  StartReplica(Echo);
  StartReplica([](const ServerRequest&) { return Reply::Status(503); });
  Name({replicas[0]->port(), replicas[1]->port()});
  Settings s = BalancedSettings();
  s.balancing->re_resolve_every = hours(24);  // no timer but the ejections'
  auto client = MakeClient(s);
  EXPECT_EQ(Count(Call(*client, 200, 1), 200), 200);
  EXPECT_EQ(replicas[1]->request_count(), 5u);  // one at a time: exactly the run

  clock.Advance(seconds(29));
  EXPECT_EQ(Count(Call(*client, 50, 1), 200), 50);
  EXPECT_EQ(replicas[1]->request_count(), 5u);  // still out

  clock.Advance(seconds(2));  // 31 s: probed back, and out again after five more
  EXPECT_EQ(Count(Call(*client, 200, 1), 200), 200);
  EXPECT_EQ(replicas[1]->request_count(), 10u);

  clock.Advance(seconds(59));  // the second ejection is 60 s
  EXPECT_EQ(Count(Call(*client, 50, 1), 200), 50);
  EXPECT_EQ(replicas[1]->request_count(), 10u);
  clock.Advance(seconds(2));
  EXPECT_EQ(Count(Call(*client, 200, 1), 200), 200);
  EXPECT_EQ(replicas[1]->request_count(), 15u);
}

TEST_F(BalancingTest, NeverEjectsTheOnlyEndpoint) {
  // Four 503s, then answers: a run of three would eject it were it not
  // alone (the breaker, at five in a row, stays closed).
  std::atomic<int> served{0};
  StartReplica(
      [&served](const ServerRequest&) { return ++served <= 4 ? Reply::Status(503) : Reply::Ok(); });
  Name({replicas[0]->port()});
  Settings s = BalancedSettings();
  s.max_attempts = 1;
  s.balancing->outlier_detection.consecutive_failures = 3;
  auto client = MakeClient(s);
  std::vector<int> statuses = Call(*client, 12, 1);
  EXPECT_EQ(Count(statuses, 503), 4);
  EXPECT_EQ(Count(statuses, 200), 8);
  EXPECT_EQ(replicas[0]->request_count(), 12u);
}

TEST_F(BalancingTest, AnEndpointAddedToTheNameGetsCallsWithinOneReResolution) {
  StartReplica(Echo);
  StartReplica(Echo);
  StartReplica(Echo);
  Name({replicas[0]->port(), replicas[1]->port()});
  auto client = MakeClient(BalancedSettings());
  EXPECT_EQ(Count(Call(*client, 100), 200), 100);
  Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
  EXPECT_EQ(Count(Call(*client, 100), 200), 100);
  EXPECT_EQ(replicas[2]->request_count(), 0u);  // not resolved again yet

  clock.Advance(seconds(33));  // 30 s within ±10 %
  EXPECT_EQ(Count(Call(*client, 300), 200), 300);
  EXPECT_GE(replicas[2]->request_count(), 60u);
}

TEST_F(BalancingTest, AnEndpointRemovedFromTheNameGetsNoneOnceItsConnectionsDrain) {
  StartReplica(Echo);
  StartReplica(Echo);
  Name({replicas[0]->port(), replicas[1]->port()});
  auto client = MakeClient(BalancedSettings());
  EXPECT_EQ(Count(Call(*client, 100), 200), 100);
  ASSERT_GT(replicas[1]->request_count(), 0u);

  Name({replicas[0]->port()});
  clock.Advance(seconds(33));
  // Its idle connection closes.
  EXPECT_TRUE(
      replicas[1]->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 0; }));
  std::size_t before = replicas[1]->request_count();
  EXPECT_EQ(Count(Call(*client, 100), 200), 100);
  EXPECT_EQ(replicas[1]->request_count(), before);
}

TEST_F(BalancingTest, WarmOpensAConnectionToEveryEndpoint) {
  for (int i = 0; i < 3; ++i) StartReplica(Echo);
  Name({replicas[0]->port(), replicas[1]->port(), replicas[2]->port()});
  auto client = MakeClient(BalancedSettings());
  ASSERT_TRUE(client->Warm().get());
  for (const auto& replica : replicas) {
    EXPECT_TRUE(
        replica->WaitFor([](const testing::FakeServer& s) { return s.connections_opened() == 1; }));
  }
}

TEST_F(BalancingTest, SettingsNameWhatIsWrong) {
  Settings s = BalancedSettings();
  s.balancing->endpoints = {{"payments.internal", 8443}};
  auto bad_endpoint = Client::Create(runtime, s);
  ASSERT_FALSE(bad_endpoint);
  EXPECT_NE(bad_endpoint.error().message().find(
                "Settings.balancing: endpoint \"payments.internal:8443\" is not an IP address"),
            std::string::npos)
      << bad_endpoint.error().message();

  s = BalancedSettings();
  s.balancing->outlier_detection.max_ejected_share = 1.5;
  auto bad_share = Client::Create(runtime, s);
  ASSERT_FALSE(bad_share);
  EXPECT_NE(bad_share.error().message().find("max_ejected_share must be from 0 to 1"),
            std::string::npos);
}

}  // namespace
}  // namespace outbound::http
