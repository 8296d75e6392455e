// SPDX-License-Identifier: Apache-2.0
// The outbound rate limit in fake time: calls wait for their token at the
// exact instant, never past their deadline, never after their caller gave up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;

class RateLimitTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  std::unique_ptr<Client> LimitedClient(RateLimit limit) {
    Serve([](const ServerRequest&) { return Reply::Ok(); });
    Settings settings = PaymentsSettings();
    settings.rate_limit = limit;
    return MakeClient(std::move(settings));
  }
};

TEST_F(RateLimitTest, NonPositiveRatesAndBurstsAreRejectedBySettingsCheck) {
  EXPECT_TRUE(CheckRateLimit(std::nullopt));
  EXPECT_TRUE(CheckRateLimit(WithRateLimit(0.5)));
  EXPECT_FALSE(CheckRateLimit(WithRateLimit(0)));
  EXPECT_FALSE(CheckRateLimit(WithRateLimit(-3)));
  EXPECT_FALSE(CheckRateLimit(WithRateLimit(std::nan(""))));
  EXPECT_FALSE(CheckRateLimit(WithRateLimit(std::numeric_limits<double>::infinity())));
  EXPECT_FALSE(CheckRateLimit(WithRateLimit(5, 0)));
  Settings settings = PaymentsSettings();
  settings.rate_limit = WithRateLimit(0);
  auto client = Client::Create(runtime, std::move(settings));
  ASSERT_FALSE(client);
  EXPECT_THAT(client.error().message(), HasSubstr("Settings.rate_limit"));
}

TEST_F(RateLimitTest, TheBurstGoesAtOnceAndTheNextCallWaitsForItsTokenExactly) {
  auto client = LimitedClient(WithRateLimit(2, 2));
  TimePoint start = clock.Now();
  ASSERT_TRUE(client->Send(Request::Get("/1")));
  ASSERT_TRUE(client->Send(Request::Get("/2")));
  EXPECT_EQ(clock.Now(), start);
  auto third = client->SendAsync(Request::Get("/3"));
  clock.Advance(milliseconds(499));
  EXPECT_EQ(third.wait_for(milliseconds(50)), std::future_status::timeout);
  EXPECT_EQ(server->request_count(), 2u);
  clock.Advance(milliseconds(1));
  auto response = third.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(server->request_count(), 3u);
  EXPECT_EQ(clock.Now() - start, milliseconds(500));
}

TEST_F(RateLimitTest, ACallWhoseWaitWouldEndAfterItsDeadlineFailsAtOnce) {
  auto client = LimitedClient(WithRateLimit(1));
  TimePoint start = clock.Now();
  ASSERT_TRUE(client->Send(Request::Get("/1")));
  auto late = client->Send(Request::Get("/2").WithTimeout(milliseconds(999)));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind(), ErrorKind::kDeadline);
  EXPECT_THAT(late.error().message(), HasSubstr("rate limit"));
  EXPECT_EQ(clock.Now(), start);
  EXPECT_EQ(server->request_count(), 1u);
  // It took no token: the next call waits for the same one, 1s after the first.
  auto next = client->SendAsync(Request::Get("/3").WithTimeout(std::chrono::seconds(2)));
  clock.Advance(milliseconds(1000));
  ASSERT_TRUE(next.get());
  EXPECT_EQ(server->request_count(), 2u);
}

// A rate so small that the wait for a token fits no Duration (1e20 ns):
// the wait is past any deadline, not a wrapped-around one that lets the
// call through at once.
TEST_F(RateLimitTest, AWaitTooLongForADurationIsPastTheDeadline) {
  auto client = LimitedClient(WithRateLimit(1e-11));
  ASSERT_TRUE(client->Send(Request::Get("/1")));
  auto late = client->Send(Request::Get("/2"));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind(), ErrorKind::kDeadline);
  EXPECT_THAT(late.error().message(), HasSubstr("rate limit"));
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(RateLimitTest, ACallerWhoCancelsStopsWaitingAndGivesItsTokenBack) {
  auto client = LimitedClient(WithRateLimit(1));
  ASSERT_TRUE(client->Send(Request::Get("/1")));
  CancelSource cancel;
  auto waiting =
      client->SendAsync(Request::Get("/2").WithContext(Context{.cancel = cancel.token()}));
  cancel.Cancel();
  auto cancelled = waiting.get();
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().kind(), ErrorKind::kCancelled);
  EXPECT_EQ(server->request_count(), 1u);
  // The reservation went back: the next call waits 1s, not 2s.
  TimePoint start = clock.Now();
  auto next = client->SendAsync(Request::Get("/3"));
  clock.Advance(milliseconds(1000));
  ASSERT_TRUE(next.get());
  EXPECT_EQ(clock.Now() - start, milliseconds(1000));
  EXPECT_EQ(server->request_count(), 2u);
}

// Client::SetRateLimit and SetFaults from another thread while calls go:
// every call sees one whole setting, and none is lost or ends twice (the
// TSan build checks the switching itself).
TEST_F(RateLimitTest, SwitchingTheLimitAndFaultsWhileCallsGoLosesNoCall) {
  auto client = LimitedClient(WithRateLimit(1000, 1000));
  std::atomic<bool> done{false};
  std::thread switcher([&] {
    for (int i = 0; !done.load(); ++i) {
      ASSERT_TRUE(client->SetRateLimit(i % 2 == 0 ? std::optional(WithRateLimit(1000, 1000))
                                                  : std::nullopt));
      client->SetFaults(FaultSettings{.enabled = i % 3 == 0});
    }
  });
  std::vector<std::future<Result<Response>>> calls;
  for (int i = 0; i < 300; ++i) calls.push_back(client->SendAsync(Request::Get(NumberedPath(i))));
  for (auto& call : calls) {
    auto result = call.get();
    ASSERT_TRUE(result) << result.error().message();
    EXPECT_EQ(result->status, 200);
  }
  done = true;
  switcher.join();
  EXPECT_EQ(server->request_count(), 300U);
}

}  // namespace
}  // namespace outbound::http
