// SPDX-License-Identifier: Apache-2.0
#include "outbound/retry/budget.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>
#include <vector>

#include "outbound/testing/manual_clock.h"

namespace outbound::retry {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;

TEST(BudgetChecksTest, AcceptExactlyTheDocumentedRanges) {
  EXPECT_FALSE(CheckMaxTokens(2));
  EXPECT_TRUE(CheckMaxTokens(3));
  EXPECT_TRUE(CheckMaxTokens(kTokenLimit));
  EXPECT_FALSE(CheckMaxTokens(kTokenLimit + 1));
  EXPECT_FALSE(CheckTokenRatio(0.0009));
  EXPECT_TRUE(CheckTokenRatio(0.001));
  EXPECT_TRUE(CheckTokenRatio(1000.0));
  EXPECT_FALSE(CheckTokenRatio(1000.5));
  EXPECT_FALSE(CheckTokenRatio(std::numeric_limits<double>::quiet_NaN()));
}

TEST(BudgetChecksTest, ErrorSaysWhatIsWrongWithoutNamingTheField) {
  auto bad = CheckMaxTokens(2);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "must be from 3 to 1000, not 2");
  EXPECT_EQ(bad.error().kind(), ErrorKind::kInvalidSettings);
}

// gRFC A6, step by step with the defaults {10, 0.1}.
TEST(BudgetTest, StartsFullAndFollowsA6Arithmetic) {
  Budget budget(BudgetConfig{});
  EXPECT_DOUBLE_EQ(budget.tokens(), 10.0);
  EXPECT_TRUE(budget.AllowRetry());

  for (int i = 0; i < 4; ++i) budget.OnRetryable();
  EXPECT_DOUBLE_EQ(budget.tokens(), 6.0);
  EXPECT_TRUE(budget.AllowRetry());  // 6 > 5

  budget.OnRetryable();
  EXPECT_DOUBLE_EQ(budget.tokens(), 5.0);
  EXPECT_FALSE(budget.AllowRetry());  // 5 is not above half of 10

  budget.OnSuccess();
  EXPECT_DOUBLE_EQ(budget.tokens(), 5.1);
  EXPECT_TRUE(budget.AllowRetry());  // 5.1 > 5
}

TEST(BudgetTest, NeverBelowZeroNorAboveMax) {
  Budget budget(BudgetConfig{.max_tokens = 3, .token_ratio = 0.5});
  for (int i = 0; i < 10; ++i) budget.OnRetryable();
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);
  for (int i = 0; i < 100; ++i) budget.OnSuccess();
  EXPECT_DOUBLE_EQ(budget.tokens(), 3.0);
}

TEST(BudgetTest, ConcurrentUseKeepsExactArithmetic) {
  Budget budget(BudgetConfig{.max_tokens = 1000, .token_ratio = 1});
  for (int i = 0; i < 500; ++i) budget.OnRetryable();  // 500 left
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        budget.OnRetryable();
        budget.OnSuccess();
      }
    });
  }
  for (auto& t : threads) t.join();
  // Every take was matched by a give, and none hit a bound: back to 500.
  EXPECT_DOUBLE_EQ(budget.tokens(), 500.0);
}

// The floor (min_retries_per_second), on the manual clock.
TEST(BudgetFloorTest, AllowsItsRetriesASecondWhateverTheTokens) {
  testing::ManualClock clock;
  Budget budget(BudgetConfig{.max_tokens = 10, .token_ratio = 0.1, .min_retries_per_second = 2});
  for (int i = 0; i < 10; ++i) budget.OnRetryable();  // drained
  EXPECT_FALSE(budget.AllowRetry());
  EXPECT_TRUE(budget.TryRetry(clock.Now()));
  EXPECT_TRUE(budget.TryRetry(clock.Now()));
  EXPECT_FALSE(budget.TryRetry(clock.Now()));  // two this second
  clock.Advance(milliseconds(499));
  EXPECT_FALSE(budget.TryRetry(clock.Now()));
  clock.Advance(milliseconds(1));  // one comes back every half second
  EXPECT_TRUE(budget.TryRetry(clock.Now()));
  EXPECT_FALSE(budget.TryRetry(clock.Now()));
  clock.Advance(minutes(1));  // a quiet minute holds no more than a second's worth
  EXPECT_TRUE(budget.TryRetry(clock.Now()));
  EXPECT_TRUE(budget.TryRetry(clock.Now()));
  EXPECT_FALSE(budget.TryRetry(clock.Now()));
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);  // the floor takes no token
}

TEST(BudgetFloorTest, ADependencyCalledOnceAMinuteGetsItsRetry) {
  testing::ManualClock clock;
  Budget budget(BudgetConfig{});                      // the default floor
  for (int i = 0; i < 10; ++i) budget.OnRetryable();  // an outage drained it
  for (int minute = 0; minute < 5; ++minute) {
    clock.Advance(minutes(1));
    budget.OnRetryable();  // the call failed: one token, never given back
    EXPECT_TRUE(budget.TryRetry(clock.Now())) << "minute " << minute;
  }
}

TEST(BudgetFloorTest, ZeroTurnsTheFloorOff) {
  testing::ManualClock clock;
  Budget budget(BudgetConfig{.max_tokens = 3, .token_ratio = 0.1, .min_retries_per_second = 0});
  for (int i = 0; i < 3; ++i) budget.OnRetryable();
  EXPECT_FALSE(budget.TryRetry(clock.Now()));
  clock.Advance(minutes(1));
  EXPECT_FALSE(budget.TryRetry(clock.Now()));
}

TEST(BudgetFloorTest, WhileTokensAllowTheFloorIsNotSpent) {
  testing::ManualClock clock;
  Budget budget(BudgetConfig{.max_tokens = 10, .token_ratio = 0.1, .min_retries_per_second = 1});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(budget.TryRetry(clock.Now()));
  for (int i = 0; i < 10; ++i) budget.OnRetryable();
  EXPECT_TRUE(budget.TryRetry(clock.Now()));  // the floor's one, still unspent
  EXPECT_FALSE(budget.TryRetry(clock.Now()));
}

TEST(BudgetFloorTest, CheckAcceptsZeroToTheTokenLimit) {
  EXPECT_TRUE(CheckMinRetriesPerSecond(0));
  EXPECT_TRUE(CheckMinRetriesPerSecond(0.5));
  EXPECT_TRUE(CheckMinRetriesPerSecond(kTokenLimit));
  EXPECT_FALSE(CheckMinRetriesPerSecond(-1));
  EXPECT_FALSE(CheckMinRetriesPerSecond(kTokenLimit + 1));
  EXPECT_FALSE(CheckMinRetriesPerSecond(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_EQ(BudgetConfig{}.min_retries_per_second, 10);
}

}  // namespace
}  // namespace outbound::retry
