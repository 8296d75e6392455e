// SPDX-License-Identifier: Apache-2.0
#include "outbound/retry/retrier.h"

#include <algorithm>

namespace outbound::retry {

std::string_view ToString(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kSuccess:
      return "success";
    case DecisionKind::kAgain:
      return "again";
    case DecisionKind::kStopped:
      return "stopped";
    case DecisionKind::kExhausted:
      return "exhausted";
    case DecisionKind::kThrottled:
      return "throttled";
    case DecisionKind::kExpired:
      return "expired";
    case DecisionKind::kRetryAfterTooLong:
      return "retry_after_too_long";
  }
  return "unknown";
}

std::string_view ToString(ReasonKind kind) {
  switch (kind) {
    case ReasonKind::kSuccess:
      return "success";
    case ReasonKind::kRetryable:
      return "retryable";
    case ReasonKind::kClassify:
      return "classify";
    case ReasonKind::kExhausted:
      return "exhausted";
    case ReasonKind::kBudget:
      return "budget";
    case ReasonKind::kDeadline:
      return "deadline";
    case ReasonKind::kRetryAfterTooLong:
      return "retry_after_too_long";
    case ReasonKind::kUnsafe:
      return "unsafe";
    case ReasonKind::kBodyNotReplayable:
      return "body_not_replayable";
    case ReasonKind::kTooLarge:
      return "too_large";
    case ReasonKind::kRejected:
      return "rejected";
    case ReasonKind::kTransparent:
      return "transparent";
    case ReasonKind::kRepeat:
      return "repeat";
    case ReasonKind::kCancelled:
      return "cancelled";
    case ReasonKind::kHedge:
      return "hedge";
    case ReasonKind::kHedgeWon:
      return "hedge_won";
    case ReasonKind::kHedgeInFlight:
      return "hedge_in_flight";
  }
  return "unknown";
}

std::string_view ToString(Rejecter by) {
  switch (by) {
    case Rejecter::kUnknown:
      return "unknown";
    case Rejecter::kBreaker:
      return "breaker";
    case Rejecter::kBulkhead:
      return "bulkhead";
    case Rejecter::kRateLimit:
      return "rate_limit";
    case Rejecter::kAdaptiveConcurrency:
      return "adaptive_concurrency";
  }
  return "unknown";
}

std::string_view ToString(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSuccess:
      return "success";
    case Outcome::kRetry:
      return "retry";
    case Outcome::kStop:
      return "stop";
  }
  return "unknown";
}

Loop Retrier::Start(TimePoint deadline) const { return Loop(*this, deadline); }

void Loop::Count(Outcome outcome) {
  ++attempts_;
  if (outcome == Outcome::kSuccess) retrier_->budget().OnSuccess();
  if (outcome == Outcome::kRetry) retrier_->budget().OnRetryable();
}

Decision Loop::Done(Outcome outcome, Duration retry_after, TimePoint now, double uniform) {
  ++attempts_;
  const Policy& policy = retrier_->policy();
  Budget& budget = retrier_->budget();
  switch (outcome) {
    case Outcome::kSuccess:
      budget.OnSuccess();
      return {DecisionKind::kSuccess, Duration{0}, ReasonKind::kSuccess};
    case Outcome::kStop:
      return {DecisionKind::kStopped, Duration{0}, ReasonKind::kClassify};
    case Outcome::kRetry:
      break;
  }
  budget.OnRetryable();
  if (attempts_ >= policy.max_attempts) {
    return {DecisionKind::kExhausted, Duration{0}, ReasonKind::kExhausted};
  }
  if (retry_after > policy.backoff.max()) {
    return {DecisionKind::kRetryAfterTooLong, Duration{0}, ReasonKind::kRetryAfterTooLong};
  }
  Duration wait = std::max(policy.backoff.Wait(attempts_, uniform), retry_after);
  if (wait > deadline_ - now) return {DecisionKind::kExpired, Duration{0}, ReasonKind::kDeadline};
  // Asked last: a retry the floor lets through is one that will be made.
  if (!budget.TryRetry(now)) return {DecisionKind::kThrottled, Duration{0}, ReasonKind::kBudget};
  return {DecisionKind::kAgain, wait, ReasonKind::kRetryable};
}

}  // namespace outbound::retry
