// SPDX-License-Identifier: Apache-2.0
// The kit's FakeTransport under a real client: every layer above the
// transport runs as it does over sockets, in exact fake time, with no
// socket. Each test is one rule of the client, shown on the fake.
#include "outbound/testing/fake_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>
#include <string>

#include "outbound/http/client.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"

namespace outbound::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class FakeTransportTest : public ::testing::Test {
 protected:
  void Script(Handler handler) {
    transport = std::make_unique<FakeTransport>(clock, std::move(handler));
    runtime.transport = transport.get();
  }

  http::Settings PaymentsSettings() {
    http::Settings s = http::DefaultSettings();
    s.base_url = "http://payments:8080";  // no TLS: nothing is dialled anyway
    return s;
  }

  std::unique_ptr<http::Client> MakeClient(http::Settings settings) {
    auto client = http::Client::Create(runtime, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return std::move(*client);
  }
  std::unique_ptr<http::Client> MakeClient() { return MakeClient(PaymentsSettings()); }

  ManualClock clock;
  // Jitter of one half: the wait after attempt 1 is 50 ms, after 2 100 ms.
  FixedRandom random{0.5};
  Runtime runtime{.clock = &clock, .random = &random};
  std::unique_ptr<FakeTransport> transport;
};

TEST_F(FakeTransportTest, AnAnswerReachesTheCallerAndTheRequestIsRecordedAsSent) {
  Script([](const ServerRequest&) { return Reply::Ok("paid").Header("X-Ledger", "7"); });
  auto client = MakeClient();
  auto response = client->Send(http::Request::Post("/charges?x=1", "{}").Header("X-Key", "k"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "paid");
  EXPECT_EQ(response->header("X-Ledger"), "7");
  EXPECT_EQ(response->attempts, 1);
  auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/charges?x=1");
  EXPECT_EQ(requests[0].header("x-key"), "k");
  EXPECT_EQ(requests[0].body, "{}");
}

// As the HTTP/2 transport reads them: trailers after the body, and an
// answer of headers alone (gRPC's Trailers-Only) with no body.
TEST_F(FakeTransportTest, TrailersAndHeadersOnlyAnswersReachTheResponse) {
  Script([](const ServerRequest& r) {
    if (r.target == "/alone") return Reply::Ok("dropped").Header("x-state", "done").HeadersOnly();
    return Reply::Ok("body").Trailer("x-sum", "7");
  });
  auto client = MakeClient();
  auto response = client->Send(http::Request::Get("/"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "body");
  EXPECT_EQ(response->trailers.Find("x-sum"), "7");
  EXPECT_EQ(response->headers.Find("x-sum"), "");  // trailer fields never join the headers
  auto alone = client->Send(http::Request::Get("/alone"));
  ASSERT_TRUE(alone) << alone.error().message();
  EXPECT_EQ(alone->body, "");
  EXPECT_EQ(alone->header("x-state"), "done");
}

TEST_F(FakeTransportTest, A503WithRetryAfterIsRetriedAfterExactlyThatLong) {
  std::atomic<int> seen{0};
  Script([&](const ServerRequest&) {
    return seen.fetch_add(1) == 0 ? Reply::Status(503).Header("Retry-After", "2")
                                  : Reply::Ok("second");
  });
  auto client = MakeClient();
  auto call = client->SendAsync(http::Request::Get("/"));
  ASSERT_EQ(transport->request_count(), 1u);
  clock.Advance(milliseconds(1999));
  EXPECT_EQ(transport->request_count(), 1u);
  clock.Advance(milliseconds(1));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "second");
  EXPECT_EQ(transport->request_count(), 2u);
}

TEST_F(FakeTransportTest, HeadersLaterThanTheAttemptTimeoutCancelTheAttemptWhichIsRetried) {
  std::atomic<int> seen{0};
  Script([&](const ServerRequest&) {
    return seen.fetch_add(1) == 0 ? Reply::Ok("late").DelayHeaders(seconds(10))
                                  : Reply::Ok("on time");
  });
  http::Settings settings = PaymentsSettings();
  settings.attempt_timeout = seconds(1);
  auto client = MakeClient(settings);
  auto call = client->SendAsync(http::Request::Get("/"));
  clock.Advance(milliseconds(999));
  EXPECT_EQ(transport->cancelled(), 0);
  clock.Advance(milliseconds(1));  // the attempt timeout
  EXPECT_EQ(transport->cancelled(), 1);
  EXPECT_EQ(transport->request_count(), 1u);
  clock.Advance(milliseconds(50));  // the backoff
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "on time");
  EXPECT_EQ(response->attempts, 2);
}

TEST_F(FakeTransportTest, ARefusedStreamIsSentAgainEvenForAPostAndTheBreakerCountsNothing) {
  std::atomic<int> seen{0};
  Script([&](const ServerRequest&) {
    return seen.fetch_add(1) == 0 ? Reply::Reset() : Reply::Status(201);
  });
  auto client = MakeClient();
  auto call = client->SendAsync(http::Request::Post("/charges", "{}"));
  clock.Advance(milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(transport->request_count(), 2u);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
}

TEST_F(FakeTransportTest, AFailingPostIsSentOnce) {
  Script([](const ServerRequest&) { return Reply::ResetAfterHeaders("partial"); });
  auto client = MakeClient();
  auto response = client->Send(http::Request::Post("/charges", "{}"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kTransport);
  EXPECT_EQ(transport->request_count(), 1u);
}

TEST_F(FakeTransportTest, TheBreakerOpensAfterFiveLostConnectionsAndFailsTheNextCallAtOnce) {
  Script([](const ServerRequest&) { return Reply::ResetConnection(); });
  http::Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  auto client = MakeClient(settings);
  for (int i = 0; i < 5; ++i) {
    auto failed = client->Send(http::Request::Get("/"));
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().kind(), ErrorKind::kTransport);
  }
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
  auto rejected = client->Send(http::Request::Get("/"));
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(transport->request_count(), 5u);
}

TEST_F(FakeTransportTest, ABodyOverTheLimitFailsAsTooLargeAndIsNotRetried) {
  Script([](const ServerRequest&) { return Reply::Ok(std::string(2000, 'x')); });
  http::Settings settings = PaymentsSettings();
  settings.max_response_bytes = 1000;
  auto client = MakeClient(settings);
  auto response = client->Send(http::Request::Get("/"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kResponseTooLarge);
  EXPECT_EQ(transport->request_count(), 1u);
}

// An error answer's body has a limit of its own, the smaller: a 2 MiB
// error page fails as too large where a 2 MiB answer is read whole.
TEST_F(FakeTransportTest, AnErrorAnswersBodyHasASmallerLimitOfItsOwn) {
  const std::string two_mib(2 * 1024 * 1024, 'x');
  Script([&](const ServerRequest& r) {
    return r.target == "/page" ? Reply::Status(404, two_mib) : Reply::Ok(two_mib);
  });
  auto client = MakeClient();  // the defaults: 64 MiB, and 1 MiB for an error answer
  auto ok = client->Send(http::Request::Get("/file"));
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->body.size(), two_mib.size());
  auto page = client->Send(http::Request::Get("/page"));
  ASSERT_FALSE(page);
  EXPECT_EQ(page.error().kind(), ErrorKind::kResponseTooLarge);
  EXPECT_NE(page.error().message().find("error answer's body is larger than 1048576 bytes"),
            std::string::npos)
      << page.error().message();
}

TEST_F(FakeTransportTest, ATrickledBodyReachesTheSinkPieceByPieceInFakeTime) {
  Script([](const ServerRequest&) { return Reply::Trickle("abcdef", 2, seconds(1)); });
  auto client = MakeClient();
  std::string got;
  std::mutex mu;
  auto call = client->SendAsync(http::Request::Get("/").StreamBodyTo([&](std::string_view piece) {
    std::lock_guard lock(mu);
    got.append(piece);
    return true;
  }));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(got, "ab");
  }
  clock.Advance(seconds(1));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(got, "abcd");
  }
  clock.Advance(seconds(1));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  std::lock_guard lock(mu);
  EXPECT_EQ(got, "abcdef");
}

// A sink that throws ends the call as over the transports: its exception
// reaches the caller, and nothing is sent again.
TEST_F(FakeTransportTest, ASinkThatThrowsEndsTheCallWithItsException) {
  Script([](const ServerRequest&) { return Reply::Trickle("abcdef", 2, seconds(1)); });
  auto client = MakeClient();
  auto call = client->SendAsync(http::Request::Get("/").StreamBodyTo(
      [](std::string_view) -> Result<bool> { throw std::runtime_error("the disk is full"); }));
  EXPECT_THROW((void)call.get(), std::runtime_error);
  EXPECT_EQ(transport->requests().size(), 1u);
}

// The kit hands a streamed answer's head to OnBodyHead as the transports
// do: once, before the body's first piece; a head refused ends the call
// with the caller's error and nothing of the body reaches the sink.
TEST_F(FakeTransportTest, AStreamedAnswersHeadIsHeardBeforeItsBody) {
  Script([](const ServerRequest& r) {
    return Reply::Ok("abc").Header("Content-Type", r.target == "/csv" ? "text/csv" : "text/html");
  });
  auto client = MakeClient();
  std::string got;  // the loop thread writes, the test reads after get()
  auto csv_only = [&](const http::Response& head) -> Result<void> {
    got += "head " + std::string(head.headers.Find("content-type")) + ";";
    if (head.headers.Find("content-type") == "text/csv") return {};
    return Fail(ErrorKind::kInvalidResponse, "not CSV");
  };
  auto sink = [&](std::string_view piece) {
    got.append(piece);
    return true;
  };
  auto csv = client->Send(http::Request::Get("/csv").StreamBodyTo(sink).OnBodyHead(csv_only));
  ASSERT_TRUE(csv) << csv.error().message();
  EXPECT_EQ(got, "head text/csv;abc");
  got.clear();
  auto html = client->Send(http::Request::Get("/html").StreamBodyTo(sink).OnBodyHead(csv_only));
  ASSERT_FALSE(html);
  EXPECT_EQ(html.error().kind(), ErrorKind::kInvalidResponse);
  EXPECT_EQ(html.error().attempts(), 1);
  EXPECT_EQ(got, "head text/html;");
}

// The clock a test moves, noting how many requests the transport had
// recorded when each timer of `watched` length was armed.
class WatchingClock final : public Clock {
 public:
  WatchingClock(ManualClock& clock, Duration watched) : clock_(clock), watched_(watched) {}
  TimePoint Now() const override { return clock_.Now(); }
  std::chrono::system_clock::time_point WallNow() const override { return clock_.WallNow(); }
  Timer ScheduleAt(TimePoint when, std::function<void()> callback) override {
    if (when - clock_.Now() == watched_) seen_at_arming.push_back(transport->request_count());
    return clock_.ScheduleAt(when, std::move(callback));
  }
  FakeTransport* transport = nullptr;
  std::vector<std::size_t> seen_at_arming;

 private:
  ManualClock& clock_;
  Duration watched_;
};

// A test that moves the clock as soon as it sees a request (as a hedging
// or retry test does) must find the answer's timer already pending: the
// transport records the request only after arming it.
TEST_F(FakeTransportTest, ARequestIsRecordedOnlyOnceItsAnswersDelayIsPending) {
  WatchingClock watching(clock, seconds(3));
  FakeTransport delayed(
      watching, [](const ServerRequest&) { return Reply::Ok("late").DelayHeaders(seconds(3)); });
  watching.transport = &delayed;
  Runtime own{.clock = &watching, .random = &random, .transport = &delayed};
  auto client = http::Client::CreateOrThrow(own, PaymentsSettings());
  auto call = client->SendAsync(http::Request::Get("/"));
  ASSERT_EQ(delayed.request_count(), 1u);
  EXPECT_EQ(watching.seen_at_arming, std::vector<std::size_t>{0});
  clock.Advance(seconds(3));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "late");
}

TEST_F(FakeTransportTest, AHungExchangeEndsWhenTheCallerCancelsAndTheTransportHearsOfIt) {
  Script([](const ServerRequest&) { return Reply::Hang(); });
  auto client = MakeClient();
  CancelSource cancel;
  auto call = client->SendAsync(http::Request::Get("/").WithContext({.cancel = cancel.token()}));
  EXPECT_EQ(transport->request_count(), 1u);
  cancel.Cancel();
  auto response = call.get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kCancelled);
  EXPECT_EQ(transport->cancelled(), 1);
}

TEST_F(FakeTransportTest, RawFramesNeedAServerAndSaySo) {
  Script([](const ServerRequest&) { return Reply::Frames({}); });
  auto client = MakeClient();
  auto response = client->Send(http::Request::Get("/"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_NE(response.error().message().find("use a FakeServer"), std::string::npos)
      << response.error().message();
}

}  // namespace
}  // namespace outbound::testing
