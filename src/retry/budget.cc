// SPDX-License-Identifier: Apache-2.0
#include "outbound/retry/budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

Result<void> CheckMinRetriesPerSecond(double min_retries_per_second) {
  if (!(min_retries_per_second >= 0 && min_retries_per_second <= kTokenLimit)) {
    return Fail(ErrorKind::kInvalidSettings, "must be from 0 (off) to " +
                                                 std::to_string(kTokenLimit) + ", not " +
                                                 std::to_string(min_retries_per_second));
  }
  return {};
}

namespace {

constexpr double kNanosPerSecond = 1e9;

// Nanoseconds between two retries of the floor; 0 for none.
std::int64_t FloorInterval(double per_second) {
  if (!(per_second > 0)) return 0;  // also NaN
  per_second = std::min<double>(per_second, kTokenLimit);
  return std::max<std::int64_t>(1, std::llround(kNanosPerSecond / per_second));
}

// The burst: one second's worth, at least one retry.
std::int64_t FloorSlack(double per_second, std::int64_t interval) {
  if (interval == 0) return 0;
  double burst = std::max(1.0, std::floor(std::min<double>(per_second, kTokenLimit)));
  return static_cast<std::int64_t>(burst - 1) * interval;
}

}  // namespace

Budget::Budget(BudgetConfig config)
    : config_(config),
      max_milli_(std::clamp<std::int64_t>(config.max_tokens, 3, kTokenLimit) * kMilli),
      ratio_milli_(std::clamp<std::int64_t>(std::llround(config.token_ratio * kMilli), 1,
                                            kTokenLimit * kMilli)),
      milli_tokens_(max_milli_),
      floor_interval_(FloorInterval(config.min_retries_per_second)),
      floor_slack_(FloorSlack(config.min_retries_per_second, floor_interval_)),
      floor_next_(std::numeric_limits<std::int64_t>::min()) {}

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

bool Budget::TryRetry(TimePoint now) {
  if (AllowRetry()) return true;
  if (floor_interval_ == 0) return false;
  const std::int64_t at = now.time_since_epoch().count();
  std::int64_t next = floor_next_.load(std::memory_order_relaxed);
  for (;;) {
    std::int64_t from = std::max(next, at);
    if (from - at > floor_slack_) return false;
    if (floor_next_.compare_exchange_weak(next, from + floor_interval_,
                                          std::memory_order_relaxed)) {
      return true;
    }
  }
}

double Budget::tokens() const {
  return static_cast<double>(milli_tokens_.load(std::memory_order_relaxed)) / kMilli;
}

}  // namespace outbound::retry
