// SPDX-License-Identifier: Apache-2.0
// The client against a fake dependency over real TLS and real sockets, with
// time on a ManualClock: its retries, breaker, timeouts, redirects and TLS.
#include "outbound/http/client.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "../rpc/held_door.h"
#include "client_test_support.h"
#include "outbound/testing/black_hole.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeServer;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;
using ::testing::StartsWith;

class ClientTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {};

TEST_P(ClientTest, Retries503AfterItsRetryAfter) {
  std::atomic<int> calls{0};
  Serve(
      [&](const ServerRequest&) {
        if (++calls == 1) return Reply::Status(503).Header("Retry-After", "2");
        return Reply::Ok("ok");
      },
      GetParam());
  auto client = MakeClient();
  TimePoint start = clock.Now();
  auto call = client->SendAsync(Request::Get("/charges/1"));

  ASSERT_TRUE(WaitForAttempts(1));
  ASSERT_TRUE(clock.WaitForTimerBy(start + seconds(2)));  // the Retry-After
  clock.Advance(milliseconds(1999));
  EXPECT_EQ(server->request_count(), 1u);  // not yet
  clock.Advance(milliseconds(1));
  Result<Response> response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok");
  EXPECT_EQ(response->version, GetParam() == Protocol::kHttp2 ? "2" : "1.1");
  EXPECT_EQ(server->request_count(), 2u);
  EXPECT_EQ(clock.Now() - start, seconds(2));

  auto records = Attempts();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].status, 503);
  EXPECT_EQ(records[0].decision, retry::DecisionKind::kAgain);
  EXPECT_EQ(records[1].resend_count, 1);
  EXPECT_EQ(records[1].decision, retry::DecisionKind::kSuccess);
}

TEST_P(ClientTest, BreakerOpensRejectsWithoutSendingAndClosesAfterItsOpenInterval) {
  std::atomic<bool> healthy{false};
  Serve(
      [&](const ServerRequest&) {
        return healthy ? Reply::Ok() : Reply::Status(500);  // a Failure, not retried
      },
      GetParam());
  auto client = MakeClient();
  for (int i = 0; i < 5; ++i) {
    auto response = client->Send(Request::Get("/"));
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 500);
  }
  auto rejected = client->Send(Request::Get("/"));
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().kind(), ErrorKind::kRejected);
  // The first open interval: 500ms, and a quarter more for the jitter's
  // one half.
  EXPECT_EQ(rejected.error().retry_after(), milliseconds(625));
  EXPECT_EQ(server->request_count(), 5u);  // the sixth was never sent

  healthy = true;
  clock.Advance(milliseconds(625));
  EXPECT_EQ(client->breaker_state(), circuit::State::kHalfOpen);
  for (int i = 0; i < 3; ++i) {
    auto response = client->Send(Request::Get("/"));
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
  }
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  auto t = Transitions();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].to, circuit::State::kOpen);
  EXPECT_EQ(t[0].counts.consecutive_failures, 5);
  EXPECT_EQ(t[0].open_for, milliseconds(625));
  EXPECT_EQ(t[1].to, circuit::State::kHalfOpen);
  EXPECT_EQ(t[2].to, circuit::State::kClosed);
}

TEST_P(ClientTest, PostIsSentOnceWithoutAnIdempotencyKeyAndRetriedWithOne) {
  Serve([](const ServerRequest&) { return Reply::Status(503); }, GetParam());
  auto client = MakeClient();
  auto once = client->Send(Request::Post("/charges", "amount=5"));
  ASSERT_TRUE(once);
  EXPECT_EQ(once->status, 503);
  EXPECT_EQ(server->request_count(), 1u);

  auto call =
      client->SendAsync(Request::Post("/charges", "amount=5").Header("Idempotency-Key", "k1"));
  AdvanceAfterAttempt(2, milliseconds(50));
  AdvanceAfterAttempt(3, milliseconds(100));
  auto thrice = call.get();
  ASSERT_TRUE(thrice);
  EXPECT_EQ(thrice->status, 503);
  EXPECT_EQ(server->request_count(), 4u);
  auto requests = server->requests();
  for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(requests[i].body, "amount=5");
  EXPECT_EQ(Attempts().back().decision, retry::DecisionKind::kExhausted);
}

// The transport reuses its connections from one attempt to the next; no
// method, header or body of one request may leak into the next.
TEST_P(ClientTest, EachRequestIsSentAsItWasMadeWhateverWentBefore) {
  Serve([](const ServerRequest&) { return Reply::Ok("fine"); }, GetParam());
  auto client = MakeClient();
  std::vector<Request> sent = {
      Request::Get("/a").Header("X-Trace", "t1"),
      Request::Post("/b", "amount=5").Header("Content-Type", "text/plain"),
      Request::Get("/c"),
      Request{"HEAD", "/d"},
      Request{"DELETE", "/e"},
      Request::Get("/f"),
      Request::Get("/g"),
  };
  for (const Request& request : sent) ASSERT_TRUE(client->Send(request)) << request.url;
  auto got = server->requests();
  ASSERT_EQ(got.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE(sent[i].url);
    EXPECT_EQ(got[i].method, sent[i].method);
    EXPECT_EQ(got[i].target, sent[i].url);
    EXPECT_EQ(got[i].body, sent[i].body);
    EXPECT_EQ(got[i].header("x-trace"), i == 0 ? "t1" : "");
    EXPECT_EQ(got[i].header("content-type"), i == 1 ? "text/plain" : "");
  }
}

TEST_P(ClientTest, HungAttemptIsRetriedAfterAttemptTimeoutAndItsStreamCancelled) {
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) { return ++calls == 1 ? Reply::Hang() : Reply::Ok("second"); },
        GetParam());
  auto client = MakeClient();
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 1; }));
  ASSERT_TRUE(clock.WaitForTimers(2));  // the deadline, and the attempt's timeout
  clock.Advance(seconds(5));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "second");
  EXPECT_EQ(Attempts()[0].error, ErrorKind::kDeadline);
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.cancelled_requests() == 1; }));
}

// A server that holds the first request's body unread (its head read)
// until Open, or the end of the test: an upload that takes as long as the
// test says.
class HeldUpload {
 public:
  testing::FakeServer::Options ServerOptions() const {
    testing::FakeServer::Options options;
    options.cut_reading = [gate = gate_](const ServerRequest&) -> std::optional<testing::ReadCut> {
      std::unique_lock lock(gate->mu);
      if (std::exchange(gate->held, true)) return std::nullopt;
      gate->changed.notify_all();
      gate->changed.wait(lock, [&] { return gate->open; });
      return std::nullopt;
    };
    return options;
  }

  // Blocks until the server holds the first request (10 s real time).
  bool WaitUntilHeld() {
    std::unique_lock lock(gate_->mu);
    return gate_->changed.wait_for(lock, seconds(10), [&] { return gate_->held; });
  }

  void Open() {
    std::lock_guard lock(gate_->mu);
    gate_->open = true;
    gate_->changed.notify_all();
  }

  ~HeldUpload() { Open(); }

  // More than the socket buffers and any flow-control window hold.
  static std::string Body() { return std::string(32 << 20, 'u'); }

 private:
  struct Gate {
    std::mutex mu;
    std::condition_variable changed;
    bool held = false;  // the first request's head was read, its body not
    bool open = false;
  };
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
};

// A buffered request body's upload is not the dependency's wait: while a
// long one goes (a slow link, a server that reads slowly) the attempt
// timeout pauses, and it resumes with what it had left once the last byte
// went. It counted the upload: a 5 MB PUT at 4 Mbit/s was cut at 5 s on
// every attempt, whatever the call's timeout.
TEST_P(ClientTest, ABufferedUploadPausesTheAttemptTimeout) {
  HeldUpload upload;
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) { return ++calls == 1 ? Reply::Hang() : Reply::Ok("second"); },
        GetParam(), upload.ServerOptions());
  Settings settings = PaymentsSettings();
  settings.timeout = seconds(60);
  auto client = MakeClient(settings);
  const std::string body = HeldUpload::Body();
  auto call = client->SendAsync(Request::Put("/", body));
  ASSERT_TRUE(upload.WaitUntilHeld());
  clock.Advance(settings.attempt_timeout + seconds(1));  // the upload is held
  upload.Open();
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 1; }));
  // The attempt timeout goes on, with all it had left: the dial took no time.
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + settings.attempt_timeout));
  clock.Advance(settings.attempt_timeout - milliseconds(1));
  EXPECT_TRUE(Attempts().empty()) << "the attempt timeout resumed with less than it had left";
  clock.Advance(milliseconds(1));
  AdvanceAfterAttempt(1, milliseconds(50));  // the backoff
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready)
      << "the first attempt was cut during its upload, and the second hangs";
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "second");
  EXPECT_EQ(response->attempts, 2);
  EXPECT_EQ(Attempts()[0].error, ErrorKind::kDeadline);
  auto first = server->requests()[0];
  EXPECT_TRUE(first.whole);
  EXPECT_EQ(first.body.size(), body.size());
}

// The breaker's slow-call rule pauses for the upload as the attempt timeout
// does: a dependency that reads a long body slowly is not slow to answer.
TEST_P(ClientTest, ABufferedUploadPausesTheSlowCallRule) {
  HeldUpload upload;
  Serve([](const ServerRequest&) { return Reply::Hang(); }, GetParam(), upload.ServerOptions());
  Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  settings.breaker.slow_call = seconds(1);
  // One failure opens it: the slow-call rule's count shows at once.
  settings.breaker_policy.trip = [](const circuit::Counts& counts) { return counts.failures > 0; };
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Put("/", HeldUpload::Body()));
  ASSERT_TRUE(upload.WaitUntilHeld());
  clock.Advance(settings.breaker.slow_call * 3);  // the upload is held
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed)
      << "the slow-call rule counted the upload";
  upload.Open();
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 1; }));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + settings.breaker.slow_call));
  clock.Advance(settings.breaker.slow_call - milliseconds(1));
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen)
      << "the slow-call rule did not resume once the upload ended";
  clock.Advance(settings.timeout);
  EXPECT_EQ(call.get().error().kind(), ErrorKind::kDeadline);
}

TEST_P(ClientTest, RetryAfterLongerThanBackoffMaxIsReturnedAtOnce) {
  Serve([](const ServerRequest&) { return Reply::Status(429).Header("Retry-After", "60"); },
        GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 429);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(Attempts()[0].decision, retry::DecisionKind::kRetryAfterTooLong);
}

TEST_P(ClientTest, TimeoutEndsTheRetriesRatherThanStartAWaitPastIt) {
  Serve([](const ServerRequest&) { return Reply::Status(503).Header("Retry-After", "4"); },
        GetParam());
  Settings settings = PaymentsSettings();
  settings.timeout = seconds(6);
  auto client = MakeClient(settings);
  TimePoint start = clock.Now();
  auto call = client->SendAsync(Request::Get("/"));
  AdvanceAfterAttempt(1, seconds(4));
  auto response = call.get();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(server->request_count(), 2u);
  EXPECT_EQ(clock.Now() - start, seconds(4));
  EXPECT_EQ(Attempts()[1].decision, retry::DecisionKind::kExpired);
}

TEST_P(ClientTest, RedirectWithinTheOriginIsFollowedAndToAnotherReturned) {
  Serve(
      [](const ServerRequest& r) {
        if (r.target == "/old") return Reply::Status(302).Header("Location", "/new");
        if (r.target == "/away")
          return Reply::Status(302).Header("Location", "https://ledger:8443/x");
        return Reply::Ok("at " + r.target);
      },
      GetParam());
  auto client = MakeClient();
  auto followed = client->Send(Request::Get("/old"));
  ASSERT_TRUE(followed);
  EXPECT_EQ(followed->status, 200);
  EXPECT_EQ(followed->body, "at /new");
  EXPECT_EQ(Attempts()[1].resend_count, 1);
  EXPECT_EQ(Attempts()[1].attempt, 1);  // a request of its own

  auto away = client->Send(Request::Get("/away"));
  ASSERT_TRUE(away);
  EXPECT_EQ(away->status, 302);
  EXPECT_EQ(away->header("Location"), "https://ledger:8443/x");
  EXPECT_EQ(server->request_count(), 3u);
}

TEST_P(ClientTest, IdleConnectionsCloseWhenTheClientGoes) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/")));
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(server->connections_opened(), 1);  // reused
  EXPECT_EQ(server->connections_open(), 1);
  client.reset();
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.connections_open() == 0; }));
}

// A client destroyed with calls in flight ends each of them before it
// goes: the ones on the wire as cancelled (their streams abandoned), the one
// waiting to retry with what its last attempt got. Nothing is left armed.
TEST_P(ClientTest, DestroyingTheClientEndsItsCallsInFlight) {
  Serve(
      [](const ServerRequest& r) {
        if (r.target == "/retry") return Reply::Status(503).Header("Retry-After", "1");
        if (r.target == "/hang") return Reply::Hang();
        return Reply::Ok();
      },
      GetParam());
  auto client = MakeClient();
  // Until its first answer, the client sends one attempt at a time.
  ASSERT_TRUE(client->Send(Request::Get("/")));
  auto hung1 = client->SendAsync(Request::Get("/hang"));
  auto hung2 = client->SendAsync(Request::Get("/hang"));
  auto waiting = client->SendAsync(Request::Get("/retry"));
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 4; }));
  ASSERT_TRUE(WaitForAttempts(2));  // the 503: the call now waits on the clock
  client.reset();
  for (auto* call : {&hung1, &hung2}) {
    auto result = call->get();
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().kind(), ErrorKind::kCancelled);
  }
  auto last = waiting.get();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 503);
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.cancelled_requests() == 2; }));
  EXPECT_EQ(clock.pending_timers(), 0u);
}

// A header block larger than one HTTP/2 frame (HEADERS + CONTINUATION)
// arrives whole: nothing read is left waiting for an event that never comes.
// The clock never moves here, so no timeout can end these calls.
TEST_P(ClientTest, ResponsesWithLargeHeadersArrive) {
  std::atomic<std::size_t> size{0};
  Serve(
      [&](const ServerRequest&) {
        return Reply::Ok("after").Header("X-Large", std::string(size.load(), 'v'));
      },
      GetParam());
  auto client = MakeClient();
  for (std::size_t n : {1000, 17000, 40000, 64000}) {
    size = n;
    auto call = client->SendAsync(Request::Get("/"));
    ASSERT_EQ(call.wait_for(seconds(20)), std::future_status::ready) << n << " bytes: stalled";
    auto response = call.get();
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "after");
    EXPECT_EQ(response->header("x-large").size(), n);
  }
}

TEST_P(ClientTest, MidBodyFailureCountsAsAFailureAndIsNotRetried) {
  Serve([](const ServerRequest&) { return Reply::ResetAfter(100, std::string(200000, 'x')); },
        GetParam());
  auto client = MakeClient();
  for (int i = 0; i < 5; ++i) {
    auto response = client->Send(Request::Get("/"));
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().kind(), ErrorKind::kTransport);
  }
  EXPECT_EQ(server->request_count(), 5u);
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
}

INSTANTIATE_TEST_SUITE_P(Protocols, ClientTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11),
                         [](const auto& param_info) {
                           return param_info.param == Protocol::kHttp2 ? "http2" : "http1";
                         });

class ClientH2Test : public ClientTestBase, public ::testing::Test {};

TEST_F(ClientH2Test, AnotherOriginIsRefusedAndNothingDialled) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  auto response = client->Send(Request::Get("https://ledger:8443/"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kOriginRefused);
  // Every error names the dependency first, so one log line tells clients apart.
  EXPECT_THAT(response.error().message(), StartsWith("payments:8443: "));
  EXPECT_THAT(response.error().message(), HasSubstr("https://ledger:8443"));
  EXPECT_EQ(response.error().attempts(), 0);
  EXPECT_EQ(server->connections_opened(), 0);
  // The same origin written with its default port differs from 8443.
  EXPECT_EQ(client->Send(Request::Get("https://payments/")).error().kind(),
            ErrorKind::kOriginRefused);
}

TEST_F(ClientH2Test, A303AfterAPostIsFollowedWithAGetWithoutTheBody) {
  Serve([](const ServerRequest& r) {
    if (r.target == "/charges") return Reply::Status(303).Header("Location", "/charges/7");
    return Reply::Ok(r.method + " " + r.target + " [" + r.body + "]");
  });
  auto client = MakeClient();
  auto response = client->Send(Request::Post("/charges", "amount=5")
                                   .Header("Content-Type", "application/x-www-form-urlencoded"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "GET /charges/7 []");
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].header("content-type"), "");
}

TEST_F(ClientH2Test, UserClassifyRetriesA409) {
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) { return ++calls == 1 ? Reply::Status(409) : Reply::Ok(); });
  Settings settings = PaymentsSettings();
  settings.classify = [](const Result<Response>& result) {
    if (result && result->status == 409) {
      return Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kSuccess};
    }
    return DefaultClassify(result);
  };
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Get("/accounts/1"));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(server->request_count(), 2u);
}

TEST_F(ClientH2Test, UserClassifyReadsA200sBody) {
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) {
    return ++calls == 1 ? Reply::Ok(R"({"error":"busy"})") : Reply::Ok(R"({"id":7})");
  });
  Settings settings = PaymentsSettings();
  settings.classify = [](const Result<Response>& result) {
    if (result && result->body.find("\"error\"") != std::string::npos) {
      return Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kSuccess};
    }
    return DefaultClassify(result);
  };
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Get("/"));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, R"({"id":7})");
}

TEST_F(ClientH2Test, WhatTheClientDecidesStaysTheClients) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  std::atomic<int> asked{0};
  Settings settings = PaymentsSettings();
  settings.classify = [&](const Result<Response>&) {
    ++asked;
    return Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kFailure};
  };
  auto client = MakeClient(settings);
  auto post = client->Send(Request::Post("/charges", "x"));
  ASSERT_TRUE(post);
  EXPECT_EQ(server->request_count(), 1u);  // a POST without a key: once, whatever classify says
  EXPECT_EQ(asked.load(), 1);
  // Four more failures open the breaker; its rejections are never classified.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(client->Send(Request::Post("/charges", "x")));
  ASSERT_EQ(client->breaker_state(), circuit::State::kOpen);
  auto rejected = client->Send(Request::Get("/"));
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(asked.load(), 5);
  EXPECT_EQ(server->request_count(), 5u);
}

TEST_F(ClientH2Test, CancelledCallsLeaveTheBreakerClosed) {
  Serve([](const ServerRequest& r) { return r.target == "/last" ? Reply::Ok() : Reply::Hang(); });
  auto client = MakeClient();
  for (int i = 0; i < 8; ++i) {
    CancelSource cancel;
    auto call = client->SendAsync(Request::Get("/").WithContext({.cancel = cancel.token()}));
    ASSERT_TRUE(server->WaitFor([&](const FakeServer& s) { return s.request_count() == i + 1u; }));
    cancel.Cancel();
    auto response = call.get();
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().kind(), ErrorKind::kCancelled);
  }
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  // Each abandoned stream ended at the server at once, with no later call
  // to carry anything out: reset, on the one connection they shared.
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.cancelled_requests() == 8; }));
  EXPECT_EQ(server->streams_reset_by_client(), 8);
  EXPECT_EQ(server->connections_opened(), 1);
  ASSERT_TRUE(client->Send(Request::Get("/last")));
}

// A call cut while another shares its connection: the other call is not
// harmed, and the server sees the cut stream end: reset at once, on a
// connection that is kept.
TEST_F(ClientH2Test, ACutStreamBesideAnotherEndsAtTheServerAndSparesTheOther) {
  Serve([](const ServerRequest& r) {
    if (r.target == "/hang") return Reply::Hang();
    Reply reply = Reply::Ok(r.target);
    if (r.target == "/later") reply.DelayHeaders(seconds(1));
    return reply;
  });
  auto client = MakeClient();
  auto later = client->SendAsync(Request::Get("/later"));
  // Its connection is up: the next call goes on it.
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 1u; }));
  CancelSource cancel;
  auto hung = client->SendAsync(Request::Get("/hang").WithContext({.cancel = cancel.token()}));
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 2u; }));
  cancel.Cancel();
  auto cut = hung.get();
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().kind(), ErrorKind::kCancelled);
  clock.Advance(seconds(1));
  auto answered = later.get();
  ASSERT_TRUE(answered) << answered.error().message();
  EXPECT_EQ(answered->body, "/later");
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) {
    return s.streams_reset_by_client() == 1 && s.cancelled_requests() == 1;
  }));
  EXPECT_EQ(server->connections_opened(), 1);
}

// The trailers are a field section of their own: 80 KiB of headers and
// 20 KiB of trailers are each within the 96 KiB bound, though not together.
TEST_F(ClientH2Test, TrailersAreBoundedApartFromTheHeaders) {
  Serve([](const ServerRequest&) {
    Reply reply = Reply::Ok("body");
    for (int i = 0; i < 5; ++i)
      reply.Header("X-Head-" + std::to_string(i), std::string(16000, 'h'));
    for (int i = 0; i < 2; ++i)
      reply.Trailer("X-Tail-" + std::to_string(i), std::string(10000, 't'));
    return reply;
  });
  auto client = MakeClient();
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_EQ(call.wait_for(seconds(20)), std::future_status::ready) << "stalled";
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "body");
  EXPECT_EQ(response->trailers.Find("x-tail-1").size(), 10000u);
}

// `call`, made after the server's second request went silent, was answered
// "fresh" on a connection of its own: the silent one took nothing more.
void ExpectAnsweredOnANewConnection(std::future<Result<Response>>& call,
                                    const testing::FakeServer& server) {
  // A safety net of 10 s real time: on the silent connection it would wait
  // for its own attempt timeout, which the clock never reaches.
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready)
      << "the call went to the silent connection";
  auto answer = call.get();
  ASSERT_TRUE(answer) << answer.error().message();
  EXPECT_EQ(answer->body, "fresh");
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].connection_id, 1);
  EXPECT_EQ(requests[2].connection_id, 2);
}

// A connection the server went silent on without a FIN (a dropped flow):
// the attempt that timed out on it asks with a PING whether anyone is
// there, and, unanswered for a second, the connection takes no new call:
// the next goes on a new one rather than time out in turn.
TEST_F(ClientH2Test, AConnectionThatAnswersNoPingTakesNoNewCall) {
  std::atomic<int> seen{0};
  // The connection answers its first request, then becomes a black hole:
  // nothing more is answered on it, PINGs included.
  Serve([&](const ServerRequest&) {
    int n = seen++;
    return n == 1 ? Reply::Frames({}) : Reply::Ok(n == 0 ? "warm" : "fresh");
  });
  Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  auto client = MakeClient(settings);
  // Answered: the client has read all the server sent so far, so the
  // connection was last heard from now, on the test's clock.
  ASSERT_TRUE(client->Send(Request::Get("/warm")));
  auto first = client->SendAsync(Request::Get("/1"));
  ASSERT_TRUE(server->WaitForRequests(2));
  ASSERT_TRUE(clock.WaitForTimers(2));  // the deadline, and the attempt's timeout
  clock.Advance(settings.attempt_timeout);
  auto timed_out = first.get();
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().kind(), ErrorKind::kDeadline);
  // The caller hears of the timeout before the loop cancels the stream and
  // sends the PING (with the RST_STREAM, the first the silent server reads
  // after the request): its time to be answered runs from when it went.
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.raw_bytes_read() > 0; }));
  // Idle, it is closed once its PING has gone a second unanswered (nothing
  // else would close it: no stream goes on it meanwhile).
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + seconds(1)));
  clock.Advance(seconds(1));  // the PING's time to be answered
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.connections_open() == 0; }))
      << "the connection whose PING went unanswered was kept";
  auto second = client->SendAsync(Request::Get("/2"));
  ExpectAnsweredOnANewConnection(second, *server);
}

// A connection that goes silent (a NAT's dropped flow, a dead host: no FIN,
// nothing) while calls are on it: once the server has been quiet for a
// second, the next stream started on it goes with a PING, and no other
// goes until the PING is answered. Every call of the second before the
// connection was found degraded went to it, and waited out its timeout.
TEST_F(ClientH2Test, ANewCallGoesElsewhereWhileAQuietConnectionsProbeIsOut) {
  std::atomic<int> seen{0};
  Serve([&](const ServerRequest&) {
    int n = seen++;
    return n == 1 ? Reply::Frames({}) : Reply::Ok(n == 0 ? "warm" : "fresh");
  });
  Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  auto client = MakeClient(settings);
  // The connection was last heard from now, on the test's clock.
  ASSERT_TRUE(client->Send(Request::Get("/warm")));
  auto silent = client->SendAsync(Request::Get("/1"));  // from here on nothing comes back
  ASSERT_TRUE(server->WaitForRequests(2));
  ASSERT_TRUE(clock.WaitForTimers(2));  // the deadline, and the attempt's timeout
  clock.Advance(seconds(1));
  auto probing = client->SendAsync(Request::Get("/2"));  // goes there, with the PING
  auto next = client->SendAsync(Request::Get("/3"));
  ExpectAnsweredOnANewConnection(next, *server);
  EXPECT_EQ(server->requests()[2].target, "/3");
}

// A connection slower to open than an attempt lasts (three round trips
// over a slow link): cut short while it opens, it goes on opening, and the
// attempt's retry takes it, and the next if that is cut short too. It was
// closed with its attempt, and each retry's own connection met the same
// fate: no call ever succeeded.
TEST_F(ClientH2Test, AConnectionSlowerToOpenThanAnAttemptServesTheRetry) {
  Serve([](const ServerRequest&) { return Reply::Ok("at last"); });
  rpc::HeldDoor door(server->port());  // holds the first connection until Open
  network.Remove("payments", 8443);
  network.Add("payments", 8443, "127.0.0.1", door.port());
  Settings settings = PaymentsSettings();
  settings.attempt_timeout = seconds(1);
  settings.backoff_base = settings.backoff_max = std::chrono::milliseconds(100);
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(door.WaitForConnection());
  // Two attempts cut while it opens, each retry after its backoff (under
  // 100 ms) waiting on the connection still being opened.
  for (int cut = 0; cut < 2; ++cut) {
    ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + settings.attempt_timeout));
    clock.Advance(settings.attempt_timeout);
    ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + settings.backoff_max));
    clock.Advance(settings.backoff_max);
  }
  door.Open();
  // A safety net of 10 s real time: on a connection of its own, held in the
  // door's queue, the retry would wait for its timeout, which the clock
  // never reaches.
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready)
      << "the retry did not take the first connection";
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "at last");
  EXPECT_EQ(response->attempts, 3);
  // The first attempt's timeout says the connection was not ready, not that
  // the server was slow to answer.
  ASSERT_EQ(Attempts().size(), 3u);
  EXPECT_EQ(Attempts()[0].error, ErrorKind::kDeadline);
  EXPECT_THAT(Attempts()[0].error_message, ::testing::HasSubstr("no connection was ready"));
  EXPECT_EQ(server->connections_opened(), 1);
}

// A connection kept opening for nobody that no attempt takes again is
// closed at 10 s from when it began, not left to the kernel's dial timeout
// (a black hole's SYN: two minutes) holding a slot: the next call opens a
// connection of its own.
TEST_F(ClientH2Test, AConnectionKeptOpeningForNobodyIsClosedAtTenSeconds) {
  Serve([](const ServerRequest&) { return Reply::Ok("fresh"); });
  rpc::HeldDoor door(server->port(), 2);  // holds two connections until Open
  network.Remove("payments", 8443);
  network.Add("payments", 8443, "127.0.0.1", door.port());
  Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  settings.attempt_timeout = seconds(1);
  auto client = MakeClient(settings);
  TimePoint began = clock.Now();
  auto first = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(door.WaitForConnection());
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + settings.attempt_timeout));
  clock.Advance(settings.attempt_timeout);
  ASSERT_EQ(first.get().error().kind(), ErrorKind::kDeadline);
  // Nobody takes it: at 10 s it is closed.
  ASSERT_TRUE(clock.WaitForTimerBy(began + seconds(10)));
  clock.AdvanceTo(began + seconds(10));
  auto second = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(door.WaitForConnection(2)) << "the call waited on the connection kept opening";
  door.Open();
  auto response = second.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "fresh");
}

// gRPC servers count a PING that comes while they write nothing as a strike
// and close the connection at the third: so an attempt cancelled on a quiet
// connection asks whether anyone is there once, not again until the server
// sends HEADERS or DATA.
TEST_F(ClientH2Test, AQuietConnectionIsProbedOnceUntilTheServerSendsAgain) {
  Serve([](const ServerRequest& r) { return r.target == "/ok" ? Reply::Ok("ok") : Reply::Hang(); });
  Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  settings.attempt_timeout = seconds(2);
  // While a probe is out no stream goes on its connection: one connection
  // keeps the next call waiting for the answer, not opening another.
  settings.max_connections = 1;
  auto client = MakeClient(settings);
  int timed_out_calls = 0;
  auto time_out_one = [&] {
    std::size_t before = server->request_count();
    auto call = client->SendAsync(Request::Get("/hang"));
    ASSERT_TRUE(server->WaitForRequests(before + 1));
    ASSERT_TRUE(clock.WaitForTimers(2));  // the deadline, and the attempt's timeout
    clock.Advance(settings.attempt_timeout);
    auto timed_out = call.get();
    ASSERT_FALSE(timed_out);
    EXPECT_EQ(timed_out.error().kind(), ErrorKind::kDeadline);
    // Its RST_STREAM, and the PING if one went with it, have arrived.
    ++timed_out_calls;
    ASSERT_TRUE(server->WaitFor(
        [&](const FakeServer& s) { return s.streams_reset_by_client() == timed_out_calls; }));
  };
  for (int i = 0; i < 4; ++i) time_out_one();
  EXPECT_EQ(server->pings_from_client(), 1);
  auto ok = client->Send(Request::Get("/ok"));
  ASSERT_TRUE(ok) << ok.error().message();
  time_out_one();
  EXPECT_EQ(server->pings_from_client(), 2);
  EXPECT_EQ(server->connections_opened(), 1);
}

TEST_F(ClientH2Test, A503WithALargeBodyIsReturnedAfterOneAttempt) {
  Serve([](const ServerRequest&) { return Reply::Status(503, std::string(1 << 20, 'x')); });
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->body.size(), 1u << 20);
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(ClientH2Test, BodyOverTheLimitFailsAsTooLarge) {
  Serve([](const ServerRequest&) { return Reply::Ok(std::string(100000, 'x')); });
  Settings settings = PaymentsSettings();
  settings.max_response_bytes = 1000;
  auto client = MakeClient(settings);
  auto response = client->Send(Request::Get("/"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kResponseTooLarge);
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(ClientH2Test, CrlfInAHeaderValueIsRefusedBeforeAnythingIsSent) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/").Header("X-Note", "a\r\nX-Evil: 1"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest);
  auto bad_name = client->Send(Request::Get("/").Header("Bad Name", "x"));
  EXPECT_EQ(bad_name.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_EQ(server->connections_opened(), 0);
}

TEST_F(ClientH2Test, UntrustedCertificateIsNotRetried) {
  testing::TestCA other;
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  Settings settings = PaymentsSettings();
  settings.tls->root_pem = other.pem();
  auto client = MakeClient(settings);
  auto response = client->Send(Request::Get("/"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kTlsUntrusted);
  EXPECT_EQ(response.error().attempts(), 1);
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(ClientH2Test, MutualTls) {
  testing::ServerTls tls(ca.IssueServer({"payments"}));
  tls.client_ca_pem = ca.pem();
  auto started = FakeServer::Start(
      {.tls = tls, .handler = [](const ServerRequest&) { return Reply::Ok("hello, checkout"); }});
  ASSERT_TRUE(started);
  network.Add("payments", 8443, "127.0.0.1", (*started)->port());
  testing::Certificate me = ca.IssueClient("checkout");
  Settings settings = PaymentsSettings();
  settings.tls->client_cert_pem = me.chain_pem;
  settings.tls->client_key_pem = me.key_pem;
  auto client = MakeClient(settings);
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "hello, checkout");
}

// A server that requires a client certificate and gets none, or one it
// does not trust, refuses it with an alert: under TLS 1.3 after the
// client's side of the handshake is done, with the first read; under TLS
// 1.2 in the handshake. Either way the error names it, and it is not tried
// again (every connection meets the same refusal).
class ClientCertificateRefusedTest : public ClientH2Test,
                                     public ::testing::WithParamInterface<int> {
 protected:
  // A call to a server that trusts only client certificates of `ca`, at
  // the TLS version GetParam(), made with `client_cert` (none if empty).
  Result<Response> CallWith(const testing::Certificate* client_cert) {
    testing::ServerTls tls(ca.IssueServer({"payments"}));
    tls.client_ca_pem = ca.pem();
    tls.min_version = tls.max_version = GetParam();
    auto started = FakeServer::Start(
        {.tls = tls, .handler = [](const ServerRequest&) { return Reply::Ok("hello"); }});
    EXPECT_TRUE(started);
    if (!started) return Fail(ErrorKind::kTransport, "no server");
    refusing = std::move(*started);
    network.Add("payments", 8443, "127.0.0.1", refusing->port());
    Settings settings = PaymentsSettings();
    if (client_cert != nullptr) {
      settings.tls->client_cert_pem = client_cert->chain_pem;
      settings.tls->client_key_pem = client_cert->key_pem;
    }
    client = MakeClient(settings);
    return client->Send(Request::Get("/"));
  }

  std::unique_ptr<FakeServer> refusing;
  std::unique_ptr<Client> client;
};

// Under TLS 1.2 OpenSSL's server answers a missing certificate with a bare
// handshake_failure alert, which says no more than that.
TEST_P(ClientCertificateRefusedTest, NoneGivenIsSaidAndNotTriedAgain) {
  auto response = CallWith(nullptr);
  ASSERT_FALSE(response);
  if (GetParam() == TLS1_3_VERSION) {
    EXPECT_THAT(response.error().message(),
                ::testing::HasSubstr("the server refused the client's certificate ("));
    EXPECT_THAT(response.error().message(), ::testing::HasSubstr("none was given"));
  } else {
    EXPECT_THAT(response.error().message(), ::testing::HasSubstr("alert handshake failure"));
  }
  EXPECT_EQ(response.error().attempts(), 1);
  EXPECT_EQ(refusing->request_count(), 0u);
}

TEST_P(ClientCertificateRefusedTest, OneFromAnotherCaIsSaidAndNotTriedAgain) {
  testing::TestCA other("another CA");
  testing::Certificate stranger = other.IssueClient("checkout");
  auto response = CallWith(&stranger);
  ASSERT_FALSE(response);
  EXPECT_THAT(response.error().message(),
              ::testing::HasSubstr("the server refused the client's certificate ("));
  EXPECT_THAT(response.error().message(), ::testing::Not(::testing::HasSubstr("none was given")));
  EXPECT_EQ(response.error().attempts(), 1);
  EXPECT_EQ(refusing->request_count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Versions, ClientCertificateRefusedTest,
                         ::testing::Values(TLS1_3_VERSION, TLS1_2_VERSION),
                         [](const ::testing::TestParamInfo<int>& version) {
                           return version.param == TLS1_3_VERSION ? "tls13" : "tls12";
                         });

// Any certificate the client is given to trust is an anchor, not only a
// self-signed root: the server's own certificate here (an intermediate CA
// a private PKI hands its clients works the same way).
// A new connection resumes the TLS session a server gave on an earlier one
// (every connection made a full handshake: about six times the client's
// CPU of a resumed one, for each reconnection). A TLS 1.3 session goes
// once; servers give two with each handshake, full or resumed.
TEST_F(ClientH2Test, ANewConnectionResumesTheTlsSessionOfAnEarlierOne) {
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    SCOPED_TRACE(version == TLS1_3_VERSION ? "TLS 1.3" : "TLS 1.2");
    testing::ServerTls tls(ca.IssueServer({"payments"}));
    tls.alpn = {"http/1.1"};
    tls.max_version = version;
    // Each answer ends its connection: every call opens one.
    Serve(
        [](const ServerRequest&) {
          return Reply::Ok("once")
              .Header("Connection", "close")
              .Header("Content-Length", "4")
              .HeadersAsGiven();
        },
        Protocol::kHttp11, {.tls = tls});
    auto client = MakeClient();
    for (int i = 0; i < 3; ++i) {
      auto response = client->Send(Request::Get("/"));
      ASSERT_TRUE(response) << response.error().message();
    }
    EXPECT_EQ(server->connections_opened(), 3);
    EXPECT_EQ(server->tls_sessions_resumed(), 2);
    network.Remove("payments", 8443);
  }
}

TEST_F(ClientH2Test, ACertificateTrustedThatIsNoRootIsAnAnchor) {
  testing::Certificate served = ca.IssueServer({"payments"});
  auto started =
      FakeServer::Start({.tls = testing::ServerTls(served),
                         .handler = [](const ServerRequest&) { return Reply::Ok("pinned"); }});
  ASSERT_TRUE(started);
  network.Add("payments", 8443, "127.0.0.1", (*started)->port());
  Settings settings = PaymentsSettings();
  settings.tls->root_pem = served.cert_pem;
  auto client = MakeClient(settings);
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "pinned");
}

// A client certificate and a key that is not its own: the error says so,
// not that either is no PEM.
TEST_F(ClientH2Test, AClientKeyThatIsNotTheCertificatesIsNamed) {
  Settings settings = PaymentsSettings();
  settings.tls->client_cert_pem = ca.IssueClient("checkout").chain_pem;
  settings.tls->client_key_pem = ca.IssueClient("checkout").key_pem;
  auto client = Client::Create(runtime, settings);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().kind(), ErrorKind::kInvalidSettings);
  EXPECT_THAT(client.error().message(),
              ::testing::HasSubstr("is not the key of tls.client_cert_pem's certificate"));
}

// A key under a passphrase is refused, naming why, and nobody is asked for
// the passphrase: OpenSSL's own prompt would go to the terminal or stderr
// and read stdin.
TEST_F(ClientH2Test, AnEncryptedClientKeyIsRefusedWithoutAPrompt) {
  testing::Certificate me = ca.IssueClient("checkout");
  BIO* in = BIO_new_mem_buf(me.key_pem.data(), static_cast<int>(me.key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(in, nullptr, nullptr, nullptr);
  BIO_free(in);
  ASSERT_NE(key, nullptr);
  BIO* out = BIO_new(BIO_s_mem());
  char passphrase[] = "pw";
  ASSERT_EQ(
      PEM_write_bio_PKCS8PrivateKey(out, key, EVP_aes_256_cbc(), passphrase, 2, nullptr, nullptr),
      1);
  EVP_PKEY_free(key);
  char* data = nullptr;
  long size = BIO_get_mem_data(out, &data);
  std::string encrypted(data, static_cast<std::size_t>(size));
  BIO_free(out);
  ASSERT_NE(encrypted.find("ENCRYPTED PRIVATE KEY"), std::string::npos);

  Settings settings = PaymentsSettings();
  settings.tls->client_cert_pem = me.chain_pem;
  settings.tls->client_key_pem = encrypted;
  // What the process's stderr gets meanwhile.
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_NONBLOCK), 0);
  int saved_stderr = dup(2);
  dup2(pipe_fds[1], 2);
  auto client = Client::Create(runtime, settings);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  close(pipe_fds[1]);
  char said[256];
  ssize_t n = read(pipe_fds[0], said, sizeof said);
  close(pipe_fds[0]);
  EXPECT_LE(n, 0) << std::string(said, n > 0 ? static_cast<std::size_t>(n) : 0);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().kind(), ErrorKind::kInvalidSettings);
  EXPECT_NE(client.error().message().find("encrypted"), std::string::npos)
      << client.error().message();
}

// Every certificate of root_pem is read, or the client is not made: one
// that does not read would leave the ones after it untrusted.
TEST_F(ClientH2Test, ARootPemWithACertificateThatDoesNotReadIsRefused) {
  testing::TestCA other;
  std::string broken = other.pem();
  broken[broken.size() / 2] = '*';  // not base64
  Settings settings = PaymentsSettings();
  settings.tls->root_pem = ca.pem() + broken;
  auto client = Client::Create(runtime, settings);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().kind(), ErrorKind::kInvalidSettings);
  EXPECT_NE(client.error().message().find("cannot be read"), std::string::npos)
      << client.error().message();
  settings.tls->root_pem = ca.pem() + other.pem();
  EXPECT_TRUE(Client::Create(runtime, settings));
}

// Duration::max() is a way to say "no limit": every time a setting that
// long adds to "now" is one never reached, not one past (the sum wrapped,
// and each call failed at once, or each attempt timed out, or counted
// slow, at the clock's next tick).
TEST_F(ClientH2Test, SettingsAsLongAsDurationMaxAreNoLimit) {
  Serve([](const ServerRequest&) { return Reply::Ok("late").DelayHeaders(milliseconds(10)); });
  Settings settings = PaymentsSettings();
  settings.timeout = Duration::max();
  settings.attempt_timeout = Duration::max();
  settings.breaker.slow_call = Duration::max();
  settings.breaker.probe_timeout = Duration::max();
  settings.breaker.open_for = Duration::max();
  settings.breaker.initial_open_for = Duration::max();
  auto client = MakeClient(settings);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 3; ++i) {
    auto call = client->SendAsync(Request::Get("/"));
    ASSERT_TRUE(server->WaitForRequests(static_cast<std::size_t>(i + 1)));
    clock.Advance(milliseconds(10));
    auto response = call.get();
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "late");
  }
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_TRUE(Transitions().empty());
  EXPECT_EQ(Attempts().size(), 3u);
}

// Without balancing, a name's addresses are dialled in order until one
// answers, the next beside the last every 250 ms (happy_eyeballs_test.cc).
// An attempt timeout shorter than that lets a black hole first (its SYNs
// dropped) hold each attempt to its timeout, and every retry dialled it
// first again: the address whose connection never opened goes last from
// then on. (Cut short, the connection goes on opening for the retry, the
// next address dialled beside the black hole at once.)
TEST_F(ClientH2Test, AnAddressWhoseDialWasCutShortIsDialledLast) {
  auto hole = testing::BlackHole::Start();
  ASSERT_TRUE(hole) << hole.error().message();
  Serve([](const ServerRequest&) { return Reply::Ok("second"); });
  network.Set("payments", 8443, {{"127.0.0.1", (*hole)->port()}, {"127.0.0.1", server->port()}});
  Settings settings = PaymentsSettings();
  settings.attempt_timeout = milliseconds(200);
  // Due before the next dial's timer (250 ms from the first dial), so
  // that only the backoff can be waited for.
  settings.backoff_base = milliseconds(10);
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Get("/"));
  // The deadline, the attempt's timeout and the next dial's.
  ASSERT_TRUE(clock.WaitForTimers(3));
  clock.Advance(settings.attempt_timeout);
  AdvanceAfterAttempt(1, settings.backoff_base);  // the backoff
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready)
      << "the retry dialled the black hole again";
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "second");
  EXPECT_EQ(response->attempts, 2);
  // Later calls go on the open connection to the second address.
  auto again = client->Send(Request::Get("/"));
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(server->connections_opened(), 1);
}

TEST_F(ClientH2Test, ProxiesInTheEnvironmentAreIgnored) {
  Serve([](const ServerRequest&) { return Reply::Ok("direct"); });
  for (const char* name :
       {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}) {
    setenv(name, "http://127.0.0.1:9", 1);  // a dead port
  }
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/"));
  for (const char* name :
       {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}) {
    unsetenv(name);
  }
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "direct");
}

TEST_F(ClientH2Test, AnEarlierCallerDeadlineWins) {
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  auto client = MakeClient();
  TimePoint start = clock.Now();
  auto call = client->SendAsync(Request::Get("/").WithContext({.deadline = start + seconds(2)}));
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 1; }));
  ASSERT_TRUE(clock.WaitForTimers(2));
  clock.Advance(seconds(2));
  auto response = call.get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kDeadline);
  EXPECT_EQ(response.error().attempts(), 1);
}

TEST_F(ClientH2Test, ANameTheNetworkDoesNotKnowIsNeverDialled) {
  auto client = MakeClient();  // no server, no route for payments
  auto call = client->SendAsync(Request::Get("/"));
  AdvanceAfterAttempt(1, milliseconds(50));
  AdvanceAfterAttempt(2, milliseconds(100));
  auto response = call.get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kTransport);
  EXPECT_EQ(response.error().attempts(), 3);
}

TEST_F(ClientH2Test, ThrowingClassifyReachesTheCallerAndFreesTheProbeSlot) {
  Serve([](const ServerRequest&) { return Reply::Status(500); });
  Settings settings = PaymentsSettings();
  std::atomic<bool> throw_now{false};
  settings.classify = [&](const Result<Response>& result) {
    if (throw_now) throw std::runtime_error("classify bug");
    return DefaultClassify(result);
  };
  auto client = MakeClient(settings);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client->Send(Request::Get("/")));
  clock.Advance(seconds(10));  // half-open: one probe at a time
  throw_now = true;
  EXPECT_THROW((void)client->Send(Request::Get("/")), std::runtime_error);
  throw_now = false;
  auto probe = client->Send(Request::Get("/"));  // the slot was freed
  ASSERT_TRUE(probe);
  EXPECT_EQ(probe->status, 500);
}

TEST_F(ClientH2Test, AttemptsQueuedWhenTheBreakerOpensAreNotSent) {
  Serve([](const ServerRequest&) { return Reply::Status(500); }, Protocol::kHttp11);
  Settings settings = PaymentsSettings();
  settings.breaker_policy.trip = [](const circuit::Counts& c) { return c.failures >= 1; };
  settings.max_connections = 1;
  auto client = MakeClient(settings);
  // One HTTP/1.1 connection carries one attempt at a time: the other four
  // wait in the client's queue.
  std::vector<std::future<Result<Response>>> calls;
  for (int i = 0; i < 5; ++i) calls.push_back(client->SendAsync(Request::Get("/")));
  auto first = calls[0].get();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 500);
  for (int i = 1; i < 5; ++i) {
    auto queued = calls[static_cast<size_t>(i)].get();
    ASSERT_FALSE(queued) << "call " << i << " got " << queued->status << " after "
                         << Attempts().size() << " attempts";
    EXPECT_EQ(queued.error().kind(), ErrorKind::kRejected);
  }
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(ClientH2Test, SlowCallRuleOpensTheBreakerOnAHangLongBeforeTheAttemptTimeout) {
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  Settings settings = PaymentsSettings();
  settings.breaker.slow_call = milliseconds(250);
  auto client = MakeClient(settings);
  TimePoint start = clock.Now();
  std::vector<std::future<Result<Response>>> calls;
  for (int i = 0; i < 5; ++i) calls.push_back(client->SendAsync(Request::Get("/")));
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 5; }));
  ASSERT_TRUE(clock.WaitForTimers(3));  // deadlines, attempt timeouts, slow calls
  clock.Advance(milliseconds(249));
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
  auto t = Transitions();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].at - start, milliseconds(250));
  EXPECT_EQ(t[0].counts.consecutive_failures, 5);
  // The hung attempts themselves still wait for their timeout...
  for (auto& call : calls)
    EXPECT_EQ(call.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  // ...but the next call fails at once, and nothing is sent.
  auto rejected = client->Send(Request::Get("/"));
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(server->request_count(), 5u);

  // A probe that hangs fails at the slow-call mark too, and the breaker
  // reopens for twice as long.
  clock.Advance(milliseconds(625));
  auto probe = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 6; }));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + milliseconds(250)));
  clock.Advance(milliseconds(250));
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
  t = Transitions();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1].to, circuit::State::kHalfOpen);
  EXPECT_EQ(t[2].from, circuit::State::kHalfOpen);
  EXPECT_EQ(t[2].to, circuit::State::kOpen);
  EXPECT_EQ(t[2].open_for, milliseconds(1250));
}

TEST_F(ClientH2Test, ManyCallsInFlightOnOneConnection) {
  // The first 100 answers wait a second on the manual clock, so those 100
  // streams fill the server's limit however fast the calls are submitted.
  std::atomic<int> seen{0};
  Serve([&seen](const ServerRequest& r) {
    Reply reply = Reply::Ok(r.target);
    if (seen.fetch_add(1) < 100) reply.DelayHeaders(seconds(1));
    return reply;
  });
  auto client = MakeClient();
  std::vector<std::future<Result<Response>>> calls;
  for (int i = 0; i < 200; ++i) calls.push_back(client->SendAsync(Request::Get(NumberedPath(i))));
  // The other 100 calls go on a second connection, and only one (the
  // pool's HTTP/2 rule).
  ASSERT_TRUE(server->WaitFor([](const FakeServer& s) { return s.request_count() == 200u; }));
  clock.Advance(seconds(1));
  for (int i = 0; i < 200; ++i) {
    auto response = calls[static_cast<size_t>(i)].get();
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, NumberedPath(i));
  }
  EXPECT_EQ(server->request_count(), 200u);
  EXPECT_EQ(server->connections_opened(), 2);
}

}  // namespace
}  // namespace outbound::http
