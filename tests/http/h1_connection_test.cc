// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 transport against a server that frames its answers badly or
// ends its connection badly (FakeServer over TLS, bytes as given): what may
// end a body, what may reuse a connection, and what the client holds.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

#include "../rpc/held_door.h"
#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class H1ConnectionTest : public ClientTestBase, public ::testing::Test {
 protected:
  Settings OneConnection() {
    Settings settings = PaymentsSettings();
    settings.max_connections = 1;
    return settings;
  }
};

// A body that runs to the connection's end is whole only if the end is
// orderly (RFC 9112 §9.8): a reset cuts it short, and the call says so.
TEST_F(H1ConnectionTest, ABodyEndedByAResetIsCutShortNotWhole) {
  Serve([](const ServerRequest&) { return Reply::ResetAfter(4, "half and more").HeadersAsGiven(); },
        Protocol::kHttp11);
  auto client = MakeClient();
  auto result = client->Send(Request::Get("/report"));
  ASSERT_FALSE(result) << "took \"" << result->body << "\" as the whole body";
  EXPECT_EQ(result.error().kind(), ErrorKind::kTransport) << result.error().message();
  EXPECT_NE(result.error().message().find("cut short"), std::string::npos)
      << result.error().message();
}

// A chunked body whose trailer section never ends: what the parser cannot
// take yet is held to the head's bound, not kept until the deadline.
TEST_F(H1ConnectionTest, AnEndlessTrailerLineFailsAtTheHeadsBoundNotAtTheDeadline) {
  Serve(
      [](const ServerRequest&) {
        return Reply::Ok("0\r\nX-Endless: " + std::string(200 * 1024, 'a'))
            .Header("Transfer-Encoding", "chunked")
            .HeadersAsGiven();
      },
      Protocol::kHttp11);
  auto client = MakeClient();
  auto call = client->SendAsync(Request::Get("/feed"));
  // A safety net of 10 s real time, not a tolerance: the clock never moves.
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the client kept reading the line";
  auto result = call.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kResponseTooLarge) << result.error().message();
}

// "close" in any Connection field ends the connection after its answer,
// a "keep-alive" before it notwithstanding: the next call dials anew.
TEST_F(H1ConnectionTest, ACloseInALaterConnectionFieldEndsTheConnection) {
  Serve(
      [](const ServerRequest&) {
        return Reply::Ok("ok")
            .Header("Connection", "keep-alive")
            .Header("Connection", "close")
            .Header("Content-Length", "2")
            .HeadersAsGiven();
      },
      Protocol::kHttp11);
  auto client = MakeClient(OneConnection());
  ASSERT_TRUE(client->Send(Request::Get("/1")));
  auto second = client->Send(Request::Get("/2"));
  ASSERT_TRUE(second) << second.error().message();
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].connection_id, 1);
  EXPECT_EQ(requests[1].connection_id, 2) << "the connection the server closed was used again";
}

// The trace context's tracestate is the caller's text: with a CR LF in it,
// it is left out, never written as a field of its own.
TEST_F(H1ConnectionTest, ATracestateWithALineBreakIsNotSent) {
  Serve([](const ServerRequest&) { return Reply::Ok("ok"); }, Protocol::kHttp11);
  auto client = MakeClient();
  Request request = Request::Get("/traced");
  request.context.trace.trace_id.bytes.fill(1);
  request.context.trace.span_id.bytes.fill(2);
  request.context.trace.trace_state = "vendor=1\r\nX-Injected: yes";
  auto result = client->Send(std::move(request));
  ASSERT_TRUE(result) << result.error().message();
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_NE(requests[0].header("traceparent"), "");
  EXPECT_EQ(requests[0].header("tracestate"), "");
  EXPECT_EQ(requests[0].header("x-injected"), "");
}

// A server that closes a kept-alive connection as a request arrives on it
// (its idle close, its request limit or a graceful restart crossing the
// request), before a byte of the answer: every request after the first on
// a connection is met so, by an orderly close or a reset.
class KeptAliveCloseTest : public ClientTestBase, public ::testing::TestWithParam<const char*> {
 protected:
  void ServeClosingReusedConnections() {
    const bool reset = std::string(GetParam()) == "reset";
    Serve(
        [reset](const ServerRequest& r) {
          if (r.stream_id == 1) return Reply::Ok("answered");
          return reset ? Reply::ResetConnection() : Reply::Close();
        },
        Protocol::kHttp11);
  }

  // Sends `request` without moving the clock: a call that would wait for a
  // backoff does not end, and fails the test after 10 s of real time (a
  // safety net, not a tolerance), the clock then moved past its deadline.
  Result<Response> SendWithoutWaiting(Client& client, Request request) {
    auto call = client.SendAsync(std::move(request));
    if (call.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "the call waited";
      clock.Advance(std::chrono::hours(1));
    }
    return call.get();
  }
};

// That is no failure of the dependency's: a GET goes again at once on a
// new connection, and thirty such losses in thirty calls, half the
// breaker's window, leave it closed.
TEST_P(KeptAliveCloseTest, AGetGoesAgainAtOnceAndTheBreakerDoesNotCountIt) {
  ServeClosingReusedConnections();
  auto client = MakeClient();
  constexpr int kCalls = 30;
  for (int i = 0; i < kCalls; ++i) {
    auto response = SendWithoutWaiting(*client, Request::Get(NumberedPath(i)));
    ASSERT_TRUE(response) << "call " << i << ": " << response.error().message();
    EXPECT_EQ(response->body, "answered");
  }
  EXPECT_TRUE(Transitions().empty());
  // Each call after the first met its connection's close once, and went
  // again at once (no backoff: the clock never moved).
  std::vector<AttemptRecord> seen = Attempts();
  ASSERT_EQ(seen.size(), 2u * kCalls - 1);
  int resent = 0;
  for (const AttemptRecord& a : seen) {
    if (!a.error) continue;
    ++resent;
    EXPECT_EQ(a.decision, retry::DecisionKind::kAgain) << a.error_message;
    EXPECT_EQ(a.reason.kind, retry::ReasonKind::kTransparent) << a.error_message;
  }
  EXPECT_EQ(resent, kCalls - 1);
}

// A POST may have been read: it is not sent again, and its call fails;
// the breaker does not count it either.
TEST_P(KeptAliveCloseTest, APostIsNotSentAgainAndTheBreakerDoesNotCountIt) {
  ServeClosingReusedConnections();
  auto client = MakeClient();
  constexpr int kCalls = 30;
  int failed = 0;
  for (int i = 0; i < kCalls; ++i) {
    auto response = SendWithoutWaiting(*client, Request::Post(NumberedPath(i), "charge"));
    if (response) continue;
    ++failed;
    EXPECT_EQ(response.error().kind(), ErrorKind::kTransport) << response.error().message();
  }
  // Every other call met a kept-alive connection's close.
  EXPECT_EQ(failed, kCalls / 2);
  EXPECT_EQ(server->request_count(), static_cast<std::size_t>(kCalls));  // none sent twice
  EXPECT_TRUE(Transitions().empty());
}

// A connection's first request met so is the dependency's failure as ever:
// the breaker opens after five in a row.
TEST_P(KeptAliveCloseTest, AFreshConnectionClosedBeforeItsAnswerStillCounts) {
  const bool reset = std::string(GetParam()) == "reset";
  Serve([reset](const ServerRequest&) { return reset ? Reply::ResetConnection() : Reply::Close(); },
        Protocol::kHttp11);
  auto client = MakeClient();
  for (int i = 0; i < 3; ++i) (void)SendMovingToBackoffs(*client, Request::Get(NumberedPath(i)));
  std::vector<circuit::Transition> changes = Transitions();
  ASSERT_FALSE(changes.empty());
  EXPECT_EQ(changes.front().to, circuit::State::kOpen);
}

// Not a kept-alive connection's end: a close after an interim answer
// (the server had the request and was at work on it), or a second after
// the request was handed over. Each counts as the dependency's failure and
// a GET goes again only after a backoff, as the retry policy says.
TEST_F(H1ConnectionTest, ACloseAfterAnInterimAnswerOrLateOnAReusedConnectionCounts) {
  Reply interim_then_close = Reply::ShortBody(0, "x").HeadersAsGiven();
  interim_then_close.status = 103;
  Serve(
      [&](const ServerRequest& r) {
        if (r.stream_id == 1) return Reply::Ok("answered");
        if (r.target == "/interim") return interim_then_close;
        return Reply::Close().DelayHeaders(std::chrono::seconds(2));
      },
      Protocol::kHttp11);
  Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  auto client = MakeClient(settings);
  for (std::string target : {"/interim", "/late"}) {
    SCOPED_TRACE(target);
    {
      std::lock_guard lock(mu);
      attempts.clear();
    }
    ASSERT_TRUE(client->Send(Request::Get("/warm")));
    std::size_t before = server->request_count();
    auto call = client->SendAsync(Request::Get(target));
    ASSERT_TRUE(server->WaitForRequests(before + 1));
    if (target == "/late") clock.Advance(std::chrono::seconds(2));
    auto result = call.get();
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().kind(), ErrorKind::kTransport) << result.error().message();
    std::vector<AttemptRecord> seen = Attempts();
    ASSERT_EQ(seen.size(), 2u);
    // The classifier decided (a collateral loss would be kTransparent).
    EXPECT_EQ(seen[1].reason.kind, retry::ReasonKind::kExhausted) << seen[1].error_message;
  }
}

// Over HTTP/1.1 each attempt needs a connection of its own, so each one
// cut short while it opens (slower to open than an attempt lasts: two
// round trips on a slow link) goes on opening, and each retry takes one.
// Only one did: with two calls in flight, the other's retry opened a new
// connection that met the same fate.
TEST_F(H1ConnectionTest, EachConnectionSlowerToOpenThanAnAttemptServesARetry) {
  Serve(
      [](const ServerRequest& r) {
        return r.target == "/warm" ? Reply::Ok("warm").Header("Keep-Alive", "timeout=1")
                                   : Reply::Ok("at last");
      },
      Protocol::kHttp11);
  Settings settings = PaymentsSettings();
  settings.backoff_base = settings.backoff_max = std::chrono::milliseconds(100);
  auto client = MakeClient(settings);
  // The first connection tells the client the server speaks HTTP/1.1:
  // from then on an attempt that finds no idle connection opens one.
  // Its server keeps it a second: it is closed then, idle.
  ASSERT_TRUE(client->Send(Request::Get("/warm")));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + std::chrono::seconds(1)));
  clock.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 0; }));
  rpc::HeldDoor door(server->port(), 2);  // holds the next two connections until Open
  network.Remove("payments", 8443);
  network.Add("payments", 8443, "127.0.0.1", door.port());
  auto first = client->SendAsync(Request::Get("/1"));
  auto second = client->SendAsync(Request::Get("/2"));
  ASSERT_TRUE(door.WaitForConnection(2));
  // Both attempts are cut while their connections open.
  clock.Advance(settings.attempt_timeout);
  ASSERT_TRUE(WaitForAttempts(3));  // the warm call's, and the two cut
  door.Open();
  // Each retry after its backoff; on a connection of its own, never
  // accepted by the door, a retry would wait out its timeout, which the
  // clock does not reach here.
  for (auto* call : {&first, &second}) {
    auto response = MoveToBackoffs(*call);
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "at last");
    EXPECT_EQ(response->attempts, 2);
  }
  EXPECT_EQ(server->connections_opened(), 3);  // the warm call's and the door's two
}

// A later answer's shorter Keep-Alive timeout replaces an earlier, longer
// one: the connection closes at the shorter.
TEST_F(H1ConnectionTest, AShorterKeepAliveTimeoutReplacesALongerOne) {
  Serve(
      [](const ServerRequest& r) {
        return Reply::Ok("ok").Header("Keep-Alive",
                                      r.target == "/long" ? "timeout=60" : "timeout=5");
      },
      Protocol::kHttp11);
  auto client = MakeClient(OneConnection());
  ASSERT_TRUE(client->Send(Request::Get("/long")));
  ASSERT_TRUE(client->Send(Request::Get("/short")));
  // The close's timer is set as the connection goes idle, after the answer
  // reached the caller; moved past before it is set, it would never fire.
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + std::chrono::seconds(4)));
  clock.Advance(std::chrono::seconds(4));
  EXPECT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 0; }));
}

INSTANTIATE_TEST_SUITE_P(CloseOrReset, KeptAliveCloseTest, ::testing::Values("close", "reset"),
                         [](const auto& param) { return std::string(param.param); });

}  // namespace
}  // namespace outbound::http
