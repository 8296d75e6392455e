// SPDX-License-Identifier: Apache-2.0
// A streamed body's own bound (Request::WithBodyTimeout) against Node 20's
// stock servers, HTTP/1.1 (h1_server.js) and HTTP/2 (h2_server.js), both
// over TLS: the server sends its answer's headers and the body's first 5
// bytes, then nothing (/stall), or the rest when the test releases it
// (/held). The bound counts from the headers on the client's clock, a
// ManualClock here, so the test says exactly when the call ends; the
// server sees the answer it was still writing abandoned, also when another
// call shares the HTTP/2 connection and must not be harmed; and a body with
// its own bound outlives the call's deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "outbound/testing/manual_clock.h"
#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;
using std::chrono::milliseconds;
using std::chrono::seconds;

class BodyTimeoutPeerTest : public PeerTestBase {
 protected:
  BodyTimeoutPeerTest() { runtime.clock = &clock; }

  // Sends `request` with its body's chunks kept in `got`; returns once the
  // body's first 5 bytes are in (a failure if they never come).
  auto SendStreamed(http::Client& client, Request request) {
    auto call = client.SendAsync(std::move(request.StreamBodyTo([this](std::string_view chunk) {
      std::lock_guard lock(got_mu);
      got.append(chunk);
      return true;
    })));
    EXPECT_TRUE(WaitUntil([this] {
      std::lock_guard lock(got_mu);
      return got == "hello";
    })) << "the first 5 bytes did not arrive";
    return call;
  }

  // Sends GET /stall, its body cut 3 s after its headers.
  auto SendStalled(http::Client& client) {
    return SendStreamed(
        client, Request::Get("/stall").WithTimeout(seconds(10)).WithBodyTimeout(seconds(3)));
  }

  std::string Got() {
    std::lock_guard lock(got_mu);
    return got;
  }

  // The call ends exactly `bound` from now on the clock, with kDeadline:
  // still out 1 ms before. Returns the error's message.
  template <typename Call>
  std::string ExpectCutAfter(Call& call, milliseconds bound) {
    EXPECT_TRUE(clock.WaitForTimerBy(clock.Now() + bound)) << "no timer armed for the cut";
    clock.Advance(bound - milliseconds(1));
    EXPECT_EQ(call.wait_for(milliseconds(0)), std::future_status::timeout) << "ended too soon";
    clock.Advance(milliseconds(1));
    if (call.wait_for(seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "the call did not end";
      return "";
    }
    auto result = call.get();
    if (result) {
      ADD_FAILURE() << "status " << result->status;
      return "";
    }
    EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline);
    return result.error().message();
  }

  testing::ManualClock clock;
  std::mutex got_mu;
  std::string got;  // of /stall's body
};

class NodeBodyTimeoutTest : public BodyTimeoutPeerTest,
                            public ::testing::TestWithParam<const char*> {};

TEST_P(NodeBodyTimeoutTest, AStalledBodyEndsAtItsOwnBoundCountedFromItsHeaders) {
  StartPeer(GetParam());
  auto client = MakeClient(PaymentsSettings());
  auto call = SendStalled(*client);
  // The bound is armed once the headers are in: 3 s from then, not 10.
  std::string cut = ExpectCutAfter(call, seconds(3));
  EXPECT_NE(cut.find("body timeout (3000ms)"), std::string::npos) << cut;
  EXPECT_EQ(log->attempts(), 1) << "a body cut short is never sent again";
  // Nothing is left open at the server: the stream reset, or the
  // connection closed, under the answer it was writing.
  EXPECT_TRUE(WaitUntil([&] { return peer->Stats()["abandoned"].get<int>() == 1; }))
      << peer->Stats().dump();
  EXPECT_EQ(peer->Stats()["stalled"].get<int>(), 1);
}

// /held sends "hello" of a 100-byte body, and the rest when released. The
// call's Timeout (5 s) bounds the wait for the answer's headers; the body,
// with 60 s of its own, outlives it: the clock passes the call's deadline
// before the rest is released, and the body still arrives whole.
TEST_P(NodeBodyTimeoutTest, ABodyTimeoutLetsTheBodyOutliveTheCallsDeadline) {
  StartPeer(GetParam());
  auto client = MakeClient(PaymentsSettings());
  auto call = SendStreamed(
      *client, Request::Get("/held").WithTimeout(seconds(5)).WithBodyTimeout(seconds(60)));
  // The call's deadline is armed, and the clock goes past it.
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + seconds(5)));
  clock.Advance(seconds(6));
  ASSERT_EQ(peer->Command("release")["released"].get<int>(), 1) << peer->Stats().dump();
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready);
  auto result = call.get();
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(Got(), "hello" + std::string(95, 'x'));
  EXPECT_EQ(log->attempts(), 1);
}

// The same answer without a bound of its own: the call's Timeout (5 s)
// bounds the body too, and the server sees the answer abandoned.
TEST_P(NodeBodyTimeoutTest, WithoutABodyTimeoutTheCallsDeadlineCutsTheBody) {
  StartPeer(GetParam());
  auto client = MakeClient(PaymentsSettings());
  auto call = SendStreamed(*client, Request::Get("/held").WithTimeout(seconds(5)));
  ExpectCutAfter(call, seconds(5));
  EXPECT_EQ(Got(), "hello");
  EXPECT_EQ(log->attempts(), 1) << "a body cut short is never sent again";
  EXPECT_TRUE(WaitUntil([&] { return peer->Stats()["abandoned"].get<int>() == 1; }))
      << peer->Stats().dump();
  EXPECT_EQ(peer->Command("release")["released"].get<int>(), 0);
}

class NodeH2BodyTimeoutTest : public BodyTimeoutPeerTest, public ::testing::Test {};

// Two calls on one connection to Node's http2 server: /slow, answered 2 s
// (real time) after it arrives, and /stall, cut by its body timeout while
// /slow is still out. /slow is answered whole; the server sees /stall's
// stream end: the transport resets it at once, on the one connection.
TEST_F(NodeH2BodyTimeoutTest, ABodyCutBesideAnotherCallEndsAtTheServerAndSparesTheOther) {
  StartPeer("h2_server.js", {"--delay-ms=2000"});
  auto client = MakeClient(PaymentsSettings());
  auto slow = client->SendAsync(Request::Get("/slow").WithTimeout(seconds(10)));
  // Its connection is up: the next call goes on it.
  ASSERT_TRUE(WaitUntil([&] { return peer->Stats()["streams"].get<int>() == 1; }));
  auto stalled = SendStalled(*client);
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + seconds(3)));
  ASSERT_EQ(slow.wait_for(milliseconds(0)), std::future_status::timeout)
      << "/slow was answered before /stall was cut: nothing shared";
  clock.Advance(seconds(3));
  auto cut = stalled.get();
  ASSERT_FALSE(cut) << "status " << cut->status;
  EXPECT_EQ(cut.error().kind(), ErrorKind::kDeadline);

  auto answered = slow.get();
  ASSERT_TRUE(answered) << answered.error().message();
  EXPECT_EQ(answered->status, 200);
  EXPECT_EQ(answered->body, std::string(100, 'x'));
  EXPECT_TRUE(WaitUntil([&] { return peer->Stats()["abandoned"].get<int>() == 1; }))
      << peer->Stats().dump();
  EXPECT_EQ(log->attempts(), 2);
  EXPECT_EQ(peer->Stats()["sessions"].get<int>(), 1) << "the cut cost the connection";
}

INSTANTIATE_TEST_SUITE_P(Peers, NodeBodyTimeoutTest,
                         ::testing::Values("h1_server.js", "h2_server.js"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param).substr(0, 2);
                         });

}  // namespace
}  // namespace outbound::peers
