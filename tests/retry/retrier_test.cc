// SPDX-License-Identifier: Apache-2.0
#include "outbound/retry/retrier.h"

#include <gtest/gtest.h>

#include "outbound/testing/manual_clock.h"

namespace outbound::retry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class RetrierTest : public ::testing::Test {
 protected:
  testing::ManualClock clock;
  Budget budget{BudgetConfig{}};
  Retrier retrier{Policy{3, Exponential(milliseconds(100), seconds(5))}, budget};
  TimePoint deadline = clock.Now() + seconds(10);
};

TEST_F(RetrierTest, SuccessEndsTheCallAndRefundsTheBudget) {
  budget.OnRetryable();
  Loop loop = retrier.Start(deadline);
  Decision d = loop.Done(Outcome::kSuccess, Duration::zero(), clock.Now(), 0.5);
  EXPECT_EQ(d.kind, DecisionKind::kSuccess);
  EXPECT_DOUBLE_EQ(budget.tokens(), 9.1);
}

TEST_F(RetrierTest, StopEndsTheCall) {
  Loop loop = retrier.Start(deadline);
  EXPECT_EQ(loop.Done(Outcome::kStop, Duration::zero(), clock.Now(), 0.5).kind,
            DecisionKind::kStopped);
  EXPECT_DOUBLE_EQ(budget.tokens(), 10.0);  // a stop neither takes nor gives
}

TEST_F(RetrierTest, RetryWaitsTheJitteredBackoffAndTakesAToken) {
  Loop loop = retrier.Start(deadline);
  Decision first = loop.Done(Outcome::kRetry, Duration::zero(), clock.Now(), 0.5);
  EXPECT_EQ(first.kind, DecisionKind::kAgain);
  EXPECT_EQ(first.wait, milliseconds(50));  // half of [0, 100ms)
  Decision second = loop.Done(Outcome::kRetry, Duration::zero(), clock.Now(), 0.5);
  EXPECT_EQ(second.kind, DecisionKind::kAgain);
  EXPECT_EQ(second.wait, milliseconds(100));  // half of [0, 200ms)
  EXPECT_DOUBLE_EQ(budget.tokens(), 8.0);
}

TEST_F(RetrierTest, WaitIsTheLongerOfBackoffAndRetryAfter) {
  Loop loop = retrier.Start(deadline);
  EXPECT_EQ(loop.Done(Outcome::kRetry, seconds(2), clock.Now(), 0.5).wait, seconds(2));
  Loop other = retrier.Start(deadline);
  EXPECT_EQ(other.Done(Outcome::kRetry, milliseconds(1), clock.Now(), 0.5).wait, milliseconds(50));
}

TEST_F(RetrierTest, MaxAttemptsExhausts) {
  Loop loop = retrier.Start(deadline);
  EXPECT_EQ(loop.Done(Outcome::kRetry, Duration::zero(), clock.Now(), 0).kind,
            DecisionKind::kAgain);
  EXPECT_EQ(loop.Done(Outcome::kRetry, Duration::zero(), clock.Now(), 0).kind,
            DecisionKind::kAgain);
  EXPECT_EQ(loop.Done(Outcome::kRetry, Duration::zero(), clock.Now(), 0).kind,
            DecisionKind::kExhausted);
  EXPECT_EQ(loop.attempts(), 3);
}

TEST_F(RetrierTest, OneMaxAttemptTurnsRetriesOff) {
  Retrier once(Policy{1, Exponential(milliseconds(100), seconds(5))}, budget);
  Loop loop = once.Start(deadline);
  EXPECT_EQ(loop.Done(Outcome::kRetry, Duration::zero(), clock.Now(), 0).kind,
            DecisionKind::kExhausted);
}

TEST_F(RetrierTest, EmptyBudgetThrottles) {
  // The token rule alone: no floor under it.
  Budget tokens_only{
      BudgetConfig{.max_tokens = 10, .token_ratio = 0.1, .min_retries_per_second = 0}};
  Retrier throttled{Policy{3, Exponential(milliseconds(100), seconds(5))}, tokens_only};
  for (int i = 0; i < 4; ++i) tokens_only.OnRetryable();  // 6 left
  Loop loop = throttled.Start(deadline);
  // This retry takes the budget to 5: not above half, so it is refused.
  Decision d = loop.Done(Outcome::kRetry, Duration::zero(), clock.Now(), 0);
  EXPECT_EQ(d.kind, DecisionKind::kThrottled);
  EXPECT_EQ(d.reason, ReasonKind::kBudget);
}

TEST_F(RetrierTest, TheBudgetsFloorAllowsARetryTheTokensRefuse) {
  for (int i = 0; i < 4; ++i) budget.OnRetryable();  // 6 left; the default floor, 10/s
  Loop loop = retrier.Start(deadline);
  Decision d = loop.Done(Outcome::kRetry, Duration::zero(), clock.Now(), 0);
  EXPECT_EQ(d.kind, DecisionKind::kAgain);
  EXPECT_EQ(d.reason, ReasonKind::kRetryable);
}

TEST_F(RetrierTest, EachDecisionNamesTheRuleThatMadeIt) {
  Loop loop = retrier.Start(deadline);
  EXPECT_EQ(loop.Done(Outcome::kSuccess, Duration::zero(), clock.Now(), 0).reason,
            ReasonKind::kSuccess);
  EXPECT_EQ(loop.Done(Outcome::kStop, Duration::zero(), clock.Now(), 0).reason,
            ReasonKind::kClassify);
  EXPECT_EQ(loop.Done(Outcome::kRetry, seconds(60), clock.Now(), 0).reason,
            ReasonKind::kExhausted);  // the third attempt
  Loop late = retrier.Start(clock.Now() + milliseconds(10));
  EXPECT_EQ(late.Done(Outcome::kRetry, seconds(1), clock.Now(), 0).reason, ReasonKind::kDeadline);
  Loop pushed = retrier.Start(deadline);
  EXPECT_EQ(pushed.Done(Outcome::kRetry, seconds(60), clock.Now(), 0).reason,
            ReasonKind::kRetryAfterTooLong);
}

TEST_F(RetrierTest, WaitPastTheDeadlineExpires) {
  TimePoint soon = clock.Now() + seconds(6);
  Loop loop = retrier.Start(soon);
  clock.Advance(seconds(2));
  Decision d = loop.Done(Outcome::kRetry, seconds(4), clock.Now(), 0);
  EXPECT_EQ(d.kind, DecisionKind::kAgain);  // ends exactly at the deadline
  clock.Advance(d.wait);
  EXPECT_EQ(loop.Done(Outcome::kRetry, seconds(4), clock.Now(), 0).kind, DecisionKind::kExpired);
}

TEST_F(RetrierTest, RetryAfterLongerThanBackoffMaxEndsTheCall) {
  Loop loop = retrier.Start(deadline);
  EXPECT_EQ(loop.Done(Outcome::kRetry, seconds(60), clock.Now(), 0).kind,
            DecisionKind::kRetryAfterTooLong);
  Loop at_max = retrier.Start(deadline);
  EXPECT_EQ(at_max.Done(Outcome::kRetry, seconds(5), clock.Now(), 0).kind, DecisionKind::kAgain);
}

TEST(DecisionNamesTest, AreSnakeCase) {
  EXPECT_EQ(ToString(DecisionKind::kThrottled), "throttled");
  EXPECT_EQ(ToString(DecisionKind::kRetryAfterTooLong), "retry_after_too_long");
  EXPECT_EQ(ToString(Outcome::kRetry), "retry");
}

}  // namespace
}  // namespace outbound::retry
