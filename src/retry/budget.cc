// SPDX-License-Identifier: Apache-2.0
#include "outbound/retry/budget.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace outbound::retry {
namespace {

constexpr std::int64_t kMilli = 1000;

}  // namespace

Result<void> CheckMaxTokens(int max_tokens) {
  if (max_tokens < 3 || max_tokens > kTokenLimit) {
    return Fail(ErrorKind::kInvalidSettings, "must be from 3 to " + std::to_string(kTokenLimit) +
                                                 ", not " + std::to_string(max_tokens));
  }
  return {};
}

Result<void> CheckTokenRatio(double token_ratio) {
  if (!(token_ratio >= 0.001 && token_ratio <= kTokenLimit)) {  // also refuses NaN
    return Fail(ErrorKind::kInvalidSettings, "must be from 0.001 to " +
                                                 std::to_string(kTokenLimit) + ", not " +
                                                 std::to_string(token_ratio));
  }
  return {};
}

Budget::Budget(BudgetConfig config)
    : config_(config),
      max_milli_(std::clamp<std::int64_t>(config.max_tokens, 3, kTokenLimit) * kMilli),
      ratio_milli_(std::clamp<std::int64_t>(std::llround(config.token_ratio * kMilli), 1,
                                            kTokenLimit * kMilli)),
      milli_tokens_(max_milli_) {}

void Budget::OnRetryable() {
  std::int64_t current = milli_tokens_.load(std::memory_order_relaxed);
  while (!milli_tokens_.compare_exchange_weak(current, std::max<std::int64_t>(0, current - kMilli),
                                              std::memory_order_relaxed)) {
  }
}

void Budget::OnSuccess() {
  std::int64_t current = milli_tokens_.load(std::memory_order_relaxed);
  // Full is the common case of a healthy dependency: no write at all then.
  while (current < max_milli_ &&
         !milli_tokens_.compare_exchange_weak(current, std::min(max_milli_, current + ratio_milli_),
                                              std::memory_order_relaxed)) {
  }
}

bool Budget::AllowRetry() const {
  return milli_tokens_.load(std::memory_order_relaxed) * 2 > max_milli_;
}

double Budget::tokens() const {
  return static_cast<double>(milli_tokens_.load(std::memory_order_relaxed)) / kMilli;
}

}  // namespace outbound::retry
