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
// Under the tokens lies a floor (Finagle's minRetriesPerSec, Envoy's
// min_retry_concurrency): `min_retries_per_second` retries a second are
// allowed whatever the tokens, so a dependency called once a minute, whose
// tokens a bad hour drained and its few calls cannot refill, still gets its
// retry. The floor is a rate on the caller's clock (the time is passed in:
// TryRetry), with a burst of one second's worth.
//
// example: examples/headers/core.cc#budget
//   retry::Budget budget(retry::BudgetConfig{});  // {10, 0.1, 10}
//   budget.OnRetryable();
//   bool again = budget.AllowRetry();
//
// Thread-safe and lock-free: one atomic integer, in thousandths of a token,
// and one for the floor's next free time.
#ifndef OUTBOUND_RETRY_BUDGET_H_
#define OUTBOUND_RETRY_BUDGET_H_

#include <atomic>
#include <cstdint>

#include "outbound/clock.h"
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
  // Retries a second allowed whatever the tokens; 0 turns the floor off.
  // Valid: 0 to kTokenLimit. Check: CheckMinRetriesPerSecond.
  //
  // 10 by default, as Finagle's: the budget is a client's (one dependency,
  // one process), so 10 a second is a load no dependency notices beside the
  // calls themselves (at 1000 calls a second, 1 %), and still at most
  // MaxAttempts - 1 retries per call, so a client calling rarely never more
  // than triples its load while the dependency is down. That is the price
  // of the rare caller's retry: a dependency called once a minute that
  // fails once is retried, which tokens drained by an earlier outage would
  // refuse for the next 50 successes. A fleet of many processes that must
  // go quiet during an outage sets it to 0 (or 1).
  double min_retries_per_second = 10;
};

// Each check says what is wrong with a value without naming the field, so a
// caller can name the setting or variable it came from.
[[nodiscard]] Result<void> CheckMaxTokens(int max_tokens);
[[nodiscard]] Result<void> CheckTokenRatio(double token_ratio);
[[nodiscard]] Result<void> CheckMinRetriesPerSecond(double min_retries_per_second);

class Budget {
 public:
  // `config` must pass both checks; Budget clamps values that do not.
  explicit Budget(BudgetConfig config);

  // Counts an attempt classified Retry: takes one token (not below zero).
  void OnRetryable();

  // Counts a successful attempt: gives back token_ratio, capped at max_tokens.
  void OnSuccess();

  // Whether the tokens allow a retry: more than half of max_tokens remain.
  // The floor is not asked (see TryRetry).
  bool AllowRetry() const;

  // Whether a retry may start at `now` (on the caller's clock): the tokens
  // allow it, or else the floor has a retry left this second, which it
  // then spends. Ask it only for a retry that will be made.
  bool TryRetry(TimePoint now);

  // The tokens held now.
  double tokens() const;

  const BudgetConfig& config() const { return config_; }

 private:
  BudgetConfig config_;
  std::int64_t max_milli_;
  std::int64_t ratio_milli_;
  std::atomic<std::int64_t> milli_tokens_;
  // The floor, as a generic cell rate: a retry is allowed while the next
  // free time is at most `floor_slack_` after now, and moves it on by
  // `floor_interval_`. Zero interval: no floor.
  std::int64_t floor_interval_;  // nanoseconds between retries of the floor
  std::int64_t floor_slack_;     // nanoseconds: the burst, less one interval
  std::atomic<std::int64_t> floor_next_;
};

}  // namespace outbound::retry

#endif  // OUTBOUND_RETRY_BUDGET_H_
