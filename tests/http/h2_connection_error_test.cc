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

class H2ConnectionErrorTest : public ClientTestBase, public ::testing::Test {};

// Eight GETs wait on streams 1 to 15; the ninth request's arrival ends the
// connection: GOAWAY(last 15, INTERNAL_ERROR), then RST_STREAM(NO_ERROR)
// on each of the eight. The eight are one loss, and go again at once,
// answered on a new connection; the ninth, the request the server met as
// it failed, is taken for the cause: kInvalidRequest, not sent again (it
// would end the next connection and the calls on it too), not the
// dependency's. A breaker that opens at two failures stays closed.
TEST_F(H2ConnectionErrorTest, AConnectionEndedForAnErrorIsOneFailure) {
  constexpr int kWaiting = 8;
  std::atomic<int> seen{0};
  Serve([&](const ServerRequest&) {
    int n = seen++;
    if (n < kWaiting) return Reply::Hang();
    if (n > kWaiting) return Reply::Ok("again");
    std::vector<h2::Frame> frames{h2::Goaway(2 * kWaiting - 1, h2::kInternalError)};
    for (int i = 0; i < kWaiting; ++i) {
      frames.push_back(h2::RstStream(static_cast<std::uint32_t>(2 * i + 1), h2::kNoError));
    }
    return Reply::Frames(std::move(frames));
  });
  Settings settings = PaymentsSettings();
  settings.breaker_policy.trip = [](const circuit::Counts& c) { return c.failures >= 2; };
  auto client = MakeClient(settings);

  std::vector<std::future<Result<Response>>> calls;
  for (int i = 0; i <= kWaiting; ++i) {
    calls.push_back(client->SendAsync(Request::Get("/cart")));
    // One at a time, so that call i is stream 2i + 1.
    ASSERT_TRUE(server->WaitFor(
        [i](const testing::FakeServer& s) { return s.request_count() == std::size_t(i + 1); }));
  }
  for (int n = 0; n <= kWaiting; ++n) {
    auto& call = calls[static_cast<std::size_t>(n)];
    // The one loss counted waits out its backoff; the others went again at once.
    for (int i = 0;
         i < 50 && call.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready; ++i) {
      clock.Advance(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(call.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    Result<Response> response = call.get();
    if (n == kWaiting) {
      ASSERT_FALSE(response);
      EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest);
      EXPECT_EQ(response.error().attempts(), 1);
      continue;
    }
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, "again");
  }
  EXPECT_EQ(server->request_count(), std::size_t{2 * kWaiting + 1});
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_TRUE(Transitions().empty());
  int lost = 0;
  int met = 0;
  for (const AttemptRecord& record : Attempts()) {
    if (!record.error) continue;
    if (record.error_message.find("GOAWAY INTERNAL_ERROR) before any header") !=
        std::string::npos) {
      ++lost;
    } else if (record.error_message.find("GOAWAY INTERNAL_ERROR) as this request reached it") !=
               std::string::npos) {
      ++met;
    }
  }
  EXPECT_EQ(lost, kWaiting);
  EXPECT_EQ(met, 1);
}

}  // namespace
}  // namespace outbound::http
