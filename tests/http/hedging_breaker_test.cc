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

class HedgingBreakerTest : public ClientTestBase, public ::testing::Test {};

// One HTTP/1.1 connection: the hedge, due at 50 ms, waits in the queue
// behind the first attempt. The first attempt's 503 at 100 ms opens the
// breaker (its policy trips at one failure) and waits for the hedge; the queue then finds
// the hedge no longer admitted. The caller hears the 503, as a call
// without the hedge would have (its retry turned away too), not "the
// circuit breaker opened before the attempt was sent".
TEST_F(HedgingBreakerTest, AHedgeTurnedAwayInTheQueueLeavesTheAnswerThatWaitedForIt) {
  Serve([](const ServerRequest&) { return Reply::Status(503).DelayHeaders(milliseconds(100)); },
        Protocol::kHttp11);
  Settings settings = PaymentsSettings();
  settings.hedging = Hedging{.delay = milliseconds(50)};
  settings.max_connections = 1;
  settings.breaker_policy.trip = [](const circuit::Counts& c) { return c.failures >= 1; };
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Get("/cart"));
  ASSERT_TRUE(server->WaitFor([](const testing::FakeServer& s) { return s.request_count() == 1; },
                              std::chrono::seconds(10)));
  clock.Advance(milliseconds(50));  // the hedge: queued behind the first attempt
  clock.Advance(milliseconds(50));  // the 503
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Result<Response> response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->attempts, 1);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
}

// Two hedges queued (at 50 and 100 ms) when the 503 comes at 150 ms: the
// first turned away waits for the second, and is no answer to keep; the
// second turned away ends the call with the 503.
TEST_F(HedgingBreakerTest, TwoHedgesTurnedAwayInTheQueueLeaveTheAnswerThatWaitedForThem) {
  Serve([](const ServerRequest&) { return Reply::Status(503).DelayHeaders(milliseconds(150)); },
        Protocol::kHttp11);
  Settings settings = PaymentsSettings();
  settings.hedging = Hedging{.delay = milliseconds(50), .max_attempts_in_flight = 3};
  settings.max_connections = 1;
  settings.breaker_policy.trip = [](const circuit::Counts& c) { return c.failures >= 1; };
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Get("/cart"));
  ASSERT_TRUE(server->WaitFor([](const testing::FakeServer& s) { return s.request_count() == 1; },
                              std::chrono::seconds(10)));
  clock.Advance(milliseconds(50));  // the first hedge, queued
  clock.Advance(milliseconds(50));  // the second, queued too
  clock.Advance(milliseconds(50));  // the 503
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Result<Response> response = call.get();
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
