// SPDX-License-Identifier: Apache-2.0
// A retry the breaker turns away after the answer it was to replace: the
// call returns that answer, as it does when the wait before a retry is cut
// short, not a rejection saying nothing was sent (which the call's earlier
// attempt makes untrue). On the kit's FakeTransport, in fake time.
#include <gtest/gtest.h>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class RetryTurnedAwayTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  // Payments answers 503 "overloaded" to everything, and the client's
  // breaker opens at its first failure.
  std::unique_ptr<Client> ClientOfAnOverloadedDependency() {
    Serve([](const ServerRequest&) { return Reply::Status(503, "overloaded"); });
    Settings settings = PaymentsSettings();
    settings.breaker_policy.trip = [](const circuit::Counts& c) { return c.failures >= 1; };
    return MakeClient(settings);
  }

  // Moves the clock on, a backoff at a time, until `call` has ended.
  Result<Response> AwaitMovingTheClock(std::future<Result<Response>>& call) {
    for (int i = 0; i < 100; ++i) {
      if (call.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) {
        return call.get();
      }
      clock.Advance(std::chrono::milliseconds(100));
    }
    return Fail(ErrorKind::kDeadline, "the call hung");
  }
};

// The first 503 opens the breaker; the retry that follows it is turned
// away. The caller gets the 503 and its
// body, with the one attempt that was sent.
TEST_F(RetryTurnedAwayTest, TheAnswerBeforeARetryTheBreakerTurnsAwayIsTheCalls) {
  auto client = ClientOfAnOverloadedDependency();
  auto call = client->SendAsync(Request::Get("/cart"));
  Result<Response> response = AwaitMovingTheClock(call);
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->body, "overloaded");
  EXPECT_EQ(response->attempts, 1);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(client->breaker_state(), circuit::State::kOpen);
  // The turned-away retry is an attempt of its own, recorded as rejected.
  auto records = Attempts();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].status, 503);
  EXPECT_EQ(records[1].error, ErrorKind::kRejected);
}

// A call whose every attempt the breaker turns away is a rejection still:
// nothing was sent.
TEST_F(RetryTurnedAwayTest, ACallTurnedAwayFromTheStartIsRejected) {
  auto client = ClientOfAnOverloadedDependency();
  auto first = client->SendAsync(Request::Get("/cart"));
  ASSERT_TRUE(AwaitMovingTheClock(first));
  auto call = client->SendAsync(Request::Get("/cart"));
  Result<Response> rejected = AwaitMovingTheClock(call);
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(server->request_count(), 1u);
}

}  // namespace
}  // namespace outbound::http
