// SPDX-License-Identifier: Apache-2.0
// The bulkhead in fake time: no more calls in flight than its bound; a
// call over it waits in the queue for the first place to free, or fails at
// once with kRejected, nothing sent and the breaker counting nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;

class BulkheadTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  // Every answer takes 100 ms.
  std::unique_ptr<Client> Bulkheaded(Bulkhead bulkhead) {
    Serve([](const ServerRequest&) { return Reply::Ok().DelayHeaders(milliseconds(100)); });
    Settings settings = PaymentsSettings();
    settings.bulkhead = bulkhead;
    return MakeClient(std::move(settings));
  }
};

TEST_F(BulkheadTest, BadBoundsAreRefusedBySettingsCheck) {
  EXPECT_TRUE(CheckBulkhead(std::nullopt));
  EXPECT_TRUE(CheckBulkhead(Bulkhead{.max_calls = 1}));
  EXPECT_FALSE(CheckBulkhead(Bulkhead{.max_calls = 0}));
  EXPECT_FALSE(CheckBulkhead(Bulkhead{.max_calls = 100001}));
  EXPECT_FALSE(CheckBulkhead(Bulkhead{.max_calls = 1, .max_queued = -1}));
  EXPECT_FALSE(CheckBulkhead(Bulkhead{.max_calls = 1, .max_queued = 1}));  // no wait
  EXPECT_TRUE(
      CheckBulkhead(Bulkhead{.max_calls = 1, .max_queued = 1, .max_wait = milliseconds(1)}));
  Settings settings = PaymentsSettings();
  settings.bulkhead = Bulkhead{};
  auto client = Client::Create(runtime, std::move(settings));
  ASSERT_FALSE(client);
  EXPECT_THAT(client.error().message(), HasSubstr("Settings.bulkhead"));
}

TEST_F(BulkheadTest, ACallOverTheBoundFailsAtOnceUnsentAndUncounted) {
  auto client = Bulkheaded(Bulkhead{.max_calls = 2});
  auto first = client->SendAsync(Request::Get("/1"));
  auto second = client->SendAsync(Request::Get("/2"));
  auto third = client->Send(Request::Get("/3"));
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(third.error().message(),
            "payments:8443: the bulkhead is full (2 calls in flight): nothing was sent");
  EXPECT_EQ(server->request_count(), 2u);
  clock.Advance(milliseconds(100));
  ASSERT_TRUE(first.get());
  ASSERT_TRUE(second.get());
  // Two attempts, none for the rejection (which the breaker never saw); the places
  // are free again: the next call goes at once.
  ASSERT_EQ(Attempts().size(), 2u);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  auto fourth = client->SendAsync(Request::Get("/4"));
  EXPECT_EQ(server->request_count(), 3u);
  clock.Advance(milliseconds(100));
  ASSERT_TRUE(fourth.get());
}

TEST_F(BulkheadTest, AQueuedCallTakesTheFirstPlaceFreedInTurn) {
  auto client = Bulkheaded(Bulkhead{.max_calls = 1, .max_queued = 2, .max_wait = seconds(1)});
  TimePoint start = clock.Now();
  auto first = client->SendAsync(Request::Get("/1"));
  auto second = client->SendAsync(Request::Get("/2"));
  auto third = client->SendAsync(Request::Get("/3"));
  auto fourth = client->Send(Request::Get("/4"));  // the queue is full
  ASSERT_FALSE(fourth);
  EXPECT_EQ(fourth.error().kind(), ErrorKind::kRejected);
  EXPECT_THAT(fourth.error().message(), HasSubstr("(1 calls in flight, 2 waiting)"));
  EXPECT_EQ(server->request_count(), 1u);
  clock.Advance(milliseconds(100));
  ASSERT_TRUE(first.get());
  EXPECT_EQ(server->request_count(), 2u);
  EXPECT_EQ(server->requests().at(1).target, "/2");
  clock.Advance(milliseconds(100));
  ASSERT_TRUE(second.get());
  clock.Advance(milliseconds(100));
  auto last = third.get();
  ASSERT_TRUE(last) << last.error().message();
  EXPECT_EQ(clock.Now() - start, milliseconds(300));
  EXPECT_EQ(server->request_count(), 3u);
}

TEST_F(BulkheadTest, AQueuedCallWaitsNoLongerThanMaxWait) {
  auto client = Bulkheaded(Bulkhead{.max_calls = 1, .max_queued = 1, .max_wait = milliseconds(50)});
  auto first = client->SendAsync(Request::Get("/1"));
  auto queued = client->SendAsync(Request::Get("/2"));
  clock.Advance(milliseconds(49));
  EXPECT_EQ(queued.wait_for(milliseconds(20)), std::future_status::timeout);
  clock.Advance(milliseconds(1));
  auto late = queued.get();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind(), ErrorKind::kRejected);
  EXPECT_THAT(late.error().message(), HasSubstr("stayed full for 50ms"));
  // It left the queue: a call now queues in its place and gets the place
  // the first call frees.
  auto next = client->SendAsync(Request::Get("/3"));
  clock.Advance(milliseconds(50));
  ASSERT_TRUE(first.get());
  clock.Advance(milliseconds(100));
  ASSERT_TRUE(next.get());
  EXPECT_EQ(server->request_count(), 2u);
}

TEST_F(BulkheadTest, AQueuedCallStopsWaitingAtItsDeadlineOrItsCallersCancel) {
  auto client = Bulkheaded(Bulkhead{.max_calls = 1, .max_queued = 2, .max_wait = seconds(10)});
  auto first = client->SendAsync(Request::Get("/1"));
  CancelSource cancel;
  auto cancelled =
      client->SendAsync(Request::Get("/2").WithContext(Context{.cancel = cancel.token()}));
  auto timed = client->SendAsync(Request::Get("/3").WithTimeout(milliseconds(30)));
  cancel.Cancel();
  auto by_caller = cancelled.get();
  ASSERT_FALSE(by_caller);
  EXPECT_EQ(by_caller.error().kind(), ErrorKind::kCancelled);
  EXPECT_THAT(by_caller.error().message(), HasSubstr("waited for the bulkhead"));
  clock.Advance(milliseconds(30));
  auto by_deadline = timed.get();
  ASSERT_FALSE(by_deadline);
  EXPECT_EQ(by_deadline.error().kind(), ErrorKind::kDeadline);
  clock.Advance(milliseconds(70));
  ASSERT_TRUE(first.get());
  // Neither took a place: the next call goes at once.
  auto next = client->SendAsync(Request::Get("/4"));
  clock.Advance(milliseconds(100));
  ASSERT_TRUE(next.get());
  EXPECT_EQ(server->request_count(), 2u);
}

TEST_F(BulkheadTest, ManyCallsGoInWavesOfTheBound) {
  auto client = Bulkheaded(Bulkhead{.max_calls = 8, .max_queued = 100, .max_wait = seconds(10)});
  std::vector<std::future<Result<Response>>> calls;
  for (int i = 0; i < 64; ++i) calls.push_back(client->SendAsync(Request::Get(NumberedPath(i))));
  for (std::size_t wave = 1; wave <= 8; ++wave) {
    EXPECT_EQ(server->request_count(), 8 * wave);
    clock.Advance(milliseconds(100));
  }
  for (auto& call : calls) ASSERT_TRUE(call.get());
  // In the order the calls were made.
  std::vector<ServerRequest> requests = server->requests();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].target, NumberedPath(static_cast<int>(i)));
  }
}

}  // namespace
}  // namespace outbound::http
