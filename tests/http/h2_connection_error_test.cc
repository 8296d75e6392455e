// SPDX-License-Identifier: Apache-2.0
// An HTTP/2 server that ends a connection for an error (RFC 9113 §5.4.1:
// GOAWAY with an error code) and then resets each stream it kept, as
// HAProxy does when one request breaks its limits: one lost connection,
// which the breaker counts once, not once a stream; the safe requests on
// it go again at once. On a FakeServer over TLS, in fake time (HAProxy 2.6
// itself was seen to do the same by hand; it is not in CI).
#include <gtest/gtest.h>

#include "client_test_support.h"
#include "outbound/testing/h2_frame.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;
namespace h2 = testing::h2;

class H2ConnectionErrorTest : public ClientTestBase, public ::testing::Test {
 protected:
  static constexpr int kWaiting = 8;

  // Eight GETs of /cart wait on streams 1 to 15; the ninth request, /big,
  // ends the connection as it arrives: GOAWAY(last 15, `error`), then
  // RST_STREAM(NO_ERROR) on each of the eight. Every later /cart is
  // answered "again"; a later /big ends its connection too (GOAWAY naming
  // the stream before it) if `every_time`, as a request over HAProxy's
  // buffers does, else it is answered. Returns the nine calls' results,
  // with a breaker that opens at two failures.
  std::vector<Result<Response>> EndTheConnectionAtTheNinth(h2::ErrorCode error, bool every_time) {
    Serve([this, error, every_time](const ServerRequest& request) {
      int n = seen++;
      if (request.target == "/big" && (bigs_seen++ == 0 || every_time)) {
        auto last = static_cast<std::uint32_t>(std::max(0, request.stream_id - 2));
        std::vector<h2::Frame> frames{h2::Goaway(last, error)};
        for (int i = 0; n == kWaiting && i < kWaiting; ++i) {
          frames.push_back(h2::RstStream(static_cast<std::uint32_t>(2 * i + 1), h2::kNoError));
        }
        return Reply::Frames(std::move(frames));
      }
      return n < kWaiting ? Reply::Hang() : Reply::Ok("again");
    });
    Settings settings = PaymentsSettings();
    settings.breaker_policy.trip = [](const circuit::Counts& c) { return c.failures >= 2; };
    client = MakeClient(settings);

    std::vector<std::future<Result<Response>>> calls;
    for (int i = 0; i <= kWaiting; ++i) {
      calls.push_back(client->SendAsync(Request::Get(i < kWaiting ? "/cart" : "/big")));
      // One at a time, so that call i is stream 2i + 1. At least: the
      // ninth's GOAWAY sends the eight again at once, and the count may
      // pass nine before this looks.
      EXPECT_TRUE(server->WaitFor(
          [i](const testing::FakeServer& s) { return s.request_count() >= std::size_t(i + 1); }));
    }
    std::vector<Result<Response>> results;
    for (auto& call : calls) {
      // The one loss counted waits out its backoff; the others went again at once.
      for (int i = 0;
           i < 50 && call.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready;
           ++i) {
        clock.Advance(std::chrono::milliseconds(50));
      }
      EXPECT_EQ(call.wait_for(std::chrono::seconds(0)), std::future_status::ready);
      results.push_back(call.get());
    }
    return results;
  }

  // How many attempts' errors say `text`.
  int AttemptsSaying(std::string_view text) {
    int n = 0;
    for (const AttemptRecord& record : Attempts()) {
      if (record.error && record.error_message.find(text) != std::string::npos) ++n;
    }
    return n;
  }

  std::atomic<int> seen{0};       // requests the server has had
  std::atomic<int> bigs_seen{0};  // of those, /big
  std::unique_ptr<Client> client;
};

// INTERNAL_ERROR, as HAProxy's when a request's fields are over its
// buffer: the eight are one loss, and go again at once, answered on a new
// connection. The ninth, the request the server met as it failed, goes
// again with them; meeting that again, it is taken for the cause:
// kInvalidRequest, not sent a third time (it would end the next connection
// and the calls on it too), not the dependency's. The breaker stays closed.
TEST_F(H2ConnectionErrorTest, ARequestThatFailsTwoConnectionsIsTakenForTheCause) {
  std::vector<Result<Response>> results = EndTheConnectionAtTheNinth(h2::kInternalError, true);
  for (int n = 0; n < kWaiting; ++n) {
    const Result<Response>& response = results[static_cast<std::size_t>(n)];
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "again");
  }
  const Result<Response>& ninth = results.back();
  ASSERT_FALSE(ninth);
  EXPECT_EQ(ninth.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_THAT(ninth.error().message(), ::testing::HasSubstr("as on a connection before"));
  EXPECT_EQ(ninth.error().attempts(), 2);
  EXPECT_EQ(bigs_seen.load(), 2);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_TRUE(Transitions().empty());
  EXPECT_EQ(AttemptsSaying("GOAWAY INTERNAL_ERROR) before any header"), kWaiting);
  EXPECT_EQ(AttemptsSaying("GOAWAY INTERNAL_ERROR) as this request reached it"), 2);
}

// The same error once: the request above the last stream may have crossed
// a failure of the server's own (nghttp2's servers end a connection whose
// client reset too many streams with INTERNAL_ERROR too), so it goes again
// with the others, and is answered.
TEST_F(H2ConnectionErrorTest, ARequestThatMetOneFailingConnectionGoesAgain) {
  std::vector<Result<Response>> results = EndTheConnectionAtTheNinth(h2::kInternalError, false);
  for (const Result<Response>& response : results) {
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "again");
  }
  EXPECT_EQ(bigs_seen.load(), 2);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_TRUE(Transitions().empty());
  EXPECT_EQ(AttemptsSaying("GOAWAY INTERNAL_ERROR) as this request reached it"), 1);
}

// ENHANCE_YOUR_CALM is about how the connection was used, not about one
// request: the ninth, unprocessed above the last-stream-id, goes again
// with the eight and is answered.
TEST_F(H2ConnectionErrorTest, AnErrorAboutTheConnectionBlamesNoRequest) {
  std::vector<Result<Response>> results = EndTheConnectionAtTheNinth(h2::kEnhanceYourCalm, false);
  for (const Result<Response>& response : results) {
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "again");
  }
  EXPECT_EQ(server->request_count(), std::size_t{2 * kWaiting + 2});
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_EQ(AttemptsSaying("GOAWAY ENHANCE_YOUR_CALM) before any header"), kWaiting);
  EXPECT_EQ(AttemptsSaying("as this request reached it"), 0);
}

}  // namespace
}  // namespace outbound::http
