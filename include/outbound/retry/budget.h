// SPDX-License-Identifier: Apache-2.0
// outbound/retry/budget.h
//
// A retry budget shared by every call to one dependency: gRPC's retry
// throttling (gRFC A6). Tokens start full. An attempt classified Retry takes
// one token; a Success gives back `token_ratio`, up to `max_tokens`. A retry
// is allowed only while more than half of `max_tokens` remain, so when a
// dependency fails everything, retries stop and each call makes about one
// attempt. First attempts are never limited.
//
// example: examples/headers/core.cc#budget
//   retry::Budget budget(retry::BudgetConfig{});  // {10, 0.1}
//   budget.OnRetryable();
//   bool again = budget.AllowRetry();
//
// Thread-safe and lock-free: one atomic integer, in thousandths of a token.
#ifndef OUTBOUND_RETRY_BUDGET_H_
#define OUTBOUND_RETRY_BUDGET_H_

#include <atomic>
#include <cstdint>

#include "outbound/error.h"

namespace outbound::retry {

// The largest max_tokens and token_ratio a budget accepts.
inline constexpr int kTokenLimit = 1000;

struct BudgetConfig {
  // The tokens the budget holds when full, and starts with.
  // Valid: 3 to kTokenLimit. Check: CheckMaxTokens.
  int max_tokens = 10;
  // The tokens a successful attempt gives back.
  // Valid: 0.001 to kTokenLimit. Check: CheckTokenRatio.
  double token_ratio = 0.1;
};

// Each check says what is wrong with a value without naming the field, so a
// caller can name the setting or variable it came from.
[[nodiscard]] Result<void> CheckMaxTokens(int max_tokens);
[[nodiscard]] Result<void> CheckTokenRatio(double token_ratio);

class Budget {
 public:
  // `config` must pass both checks; Budget clamps values that do not.
  explicit Budget(BudgetConfig config);

  // Counts an attempt classified Retry: takes one token (not below zero).
  void OnRetryable();

  // Counts a successful attempt: gives back token_ratio, capped at max_tokens.
  void OnSuccess();

  // Whether a retry may start now: more than half of max_tokens remain.
  bool AllowRetry() const;

  // The tokens held now.
  double tokens() const;

  const BudgetConfig& config() const { return config_; }

 private:
  BudgetConfig config_;
  std::int64_t max_milli_;
  std::int64_t ratio_milli_;
  std::atomic<std::int64_t> milli_tokens_;
};

}  // namespace outbound::retry

#endif  // OUTBOUND_RETRY_BUDGET_H_
