// SPDX-License-Identifier: Apache-2.0
// A hedge the breaker turns away while it waits in the client's queue, on
// a real connection: the answer that waited for it ends the call, not the
// rejection (nothing of the hedge was sent).
#include <gtest/gtest.h>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using testing::Reply;
using testing::ServerRequest;

// The first attempt's 503 comes at (hedges + 1) * 50 ms, over one HTTP/1.1
// connection; a hedge is due every 50 ms before it, and waits in the queue
// behind the first attempt. The 503 opens the breaker (its policy trips at
// one failure) and waits for the hedges; the queue then finds each hedge
// no longer admitted.
class HedgingBreakerTest : public ClientTestBase, public ::testing::Test {
 protected:
  Result<Response> CallWithHedgesQueued(int hedges) {
    const Duration answer_after = milliseconds(50) * (hedges + 1);
    Serve([answer_after](
              const ServerRequest&) { return Reply::Status(503).DelayHeaders(answer_after); },
          Protocol::kHttp11);
    Settings settings = PaymentsSettings();
    settings.hedging = Hedging{.delay = milliseconds(50), .max_attempts_in_flight = hedges + 1};
    settings.max_connections = 1;
    settings.breaker_policy.trip = [](const circuit::Counts& c) { return c.failures >= 1; };
    client = MakeClient(settings);
    auto call = client->SendAsync(Request::Get("/cart"));
    EXPECT_TRUE(server->WaitFor([](const testing::FakeServer& s) { return s.request_count() == 1; },
                                std::chrono::seconds(10)));
    for (int i = 0; i <= hedges; ++i) clock.Advance(milliseconds(50));  // each hedge, the 503
    if (call.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      return Fail(ErrorKind::kDeadline, "the call hung");  // the assertions after fail
    }
    return call.get();
  }

  std::unique_ptr<Client> client;
};

// The caller hears the 503, as a call without the hedge would have (its
// retry turned away too), not "the circuit breaker opened before the
// attempt was sent".
TEST_F(HedgingBreakerTest, AHedgeTurnedAwayInTheQueueLeavesTheAnswerThatWaitedForIt) {
  Result<Response> response = CallWithHedgesQueued(1);
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->attempts, 1);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
}

// Two hedges queued: the first turned away waits for the second, and is no
// answer to keep; the second turned away ends the call with the 503.
TEST_F(HedgingBreakerTest, TwoHedgesTurnedAwayInTheQueueLeaveTheAnswerThatWaitedForThem) {
  Result<Response> response = CallWithHedgesQueued(2);
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(server->request_count(), 1u);
  auto records = Attempts();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].error, ErrorKind::kRejected);
  EXPECT_EQ(records[2].error, ErrorKind::kRejected);
}

}  // namespace
}  // namespace outbound::http
