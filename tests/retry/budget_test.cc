// SPDX-License-Identifier: Apache-2.0
#include "outbound/retry/budget.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace outbound::retry {
namespace {

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

}  // namespace
}  // namespace outbound::retry
