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

Decision Loop::Done(Outcome outcome, Duration retry_after, TimePoint now, double uniform) {
  ++attempts_;
  const Policy& policy = retrier_->policy();
  Budget& budget = retrier_->budget();
  switch (outcome) {
    case Outcome::kSuccess:
      budget.OnSuccess();
      return {DecisionKind::kSuccess};
    case Outcome::kStop:
      return {DecisionKind::kStopped};
    case Outcome::kRetry:
      break;
  }
  budget.OnRetryable();
  if (attempts_ >= policy.max_attempts) return {DecisionKind::kExhausted};
  if (retry_after > policy.backoff.max()) return {DecisionKind::kRetryAfterTooLong};
  if (!budget.AllowRetry()) return {DecisionKind::kThrottled};
  Duration wait = std::max(policy.backoff.Wait(attempts_, uniform), retry_after);
  if (now + wait > deadline_) return {DecisionKind::kExpired};
  return {DecisionKind::kAgain, wait};
}

}  // namespace outbound::retry
