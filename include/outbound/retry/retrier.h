// SPDX-License-Identifier: Apache-2.0
// outbound/retry/retrier.h
//
// The attempt loop of one call, as pure logic: after each attempt the caller
// says how it ended (`Outcome`), and the loop decides what happens next
// (`Decision`): stop with the answer, or wait and try again. It reads no
// clock and does no I/O: `now` and the random number are arguments.
//
// example: examples/headers/core.cc#retrier
//   retry::Retrier retrier(policy, budget);      // once per dependency
//   retry::Loop loop = retrier.Start(deadline);  // once per call
//   for (;;) {
//     auto result = Attempt();
//     retry::Decision d = loop.Done(Classify(result), retry_after, clock.Now(), random.Uniform());
//     if (d.kind != retry::DecisionKind::kAgain) return result;
//     SleepUntil(clock, clock.Now() + d.wait);
//   }
//
// A Retrier is shared by every call to one dependency; a Loop belongs to one
// call and is not thread-safe.
#ifndef OUTBOUND_RETRY_RETRIER_H_
#define OUTBOUND_RETRY_RETRIER_H_

#include <string_view>

#include "outbound/clock.h"
#include "outbound/retry/backoff.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/reason.h"

namespace outbound::retry {

// How one attempt ended, as the classifier sees it.
enum class Outcome {
  kSuccess,  // the answer is good: end the call with it
  kRetry,    // another attempt may do better
  kStop,     // end the call with this answer; another attempt won't help
};

// What the loop does after an attempt.
enum class DecisionKind {
  kSuccess,            // the attempt succeeded
  kAgain,              // wait `wait`, then attempt again
  kStopped,            // the classifier said stop
  kExhausted,          // the attempt wanted a retry, but MaxAttempts are used
  kThrottled,          // the attempt wanted a retry, but the budget refused it
  kExpired,            // the wait would end after the call's deadline: not started
  kRetryAfterTooLong,  // the server asked for a wait longer than BackoffMax
};

// The decision's name in snake case, as telemetry writes it ("throttled").
std::string_view ToString(DecisionKind kind);
std::string_view ToString(Outcome outcome);

struct Decision {
  DecisionKind kind;
  // For kAgain: how long to wait before the next attempt.
  Duration wait{0};
  // Which of the loop's rules decided: kSuccess, kRetryable (for kAgain),
  // kClassify, kExhausted, kBudget, kDeadline or kRetryAfterTooLong.
  ReasonKind reason = ReasonKind::kSuccess;
};

struct Policy {
  // Attempts of one call, the first included. 1 turns retries off.
  int max_attempts = 3;
  Exponential backoff{std::chrono::milliseconds(100), std::chrono::seconds(5)};
};

class Loop;

class Retrier {
 public:
  // `budget` is shared by every call to the dependency and must outlive the
  // Retrier.
  Retrier(Policy policy, Budget& budget) : policy_(policy), budget_(&budget) {}

  // Starts the loop of one call that must end by `deadline`.
  Loop Start(TimePoint deadline) const;

  const Policy& policy() const { return policy_; }
  Budget& budget() const { return *budget_; }

 private:
  Policy policy_;
  Budget* budget_;
};

class Loop {
 public:
  // Records how the attempt just made ended, and decides what follows.
  // `retry_after` is the least wait the answer asked for (0 for none).
  // `uniform` in [0, 1) draws the jitter. Every attempt counts in the
  // budget: a Success gives tokens back, a Retry takes one, whatever the
  // decision. A retry the tokens refuse may still go under the budget's
  // floor (BudgetConfig::min_retries_per_second), measured at `now`.
  Decision Done(Outcome outcome, Duration retry_after, TimePoint now, double uniform);

  // Records an attempt that is not followed by a decision of its own
  // (another attempt of the call is in flight and may answer it: a hedge).
  // It counts towards MaxAttempts and the budget as Done counts it (a
  // retryable failure takes its token, as every failure does), and asks
  // for no retry, so nothing is drawn from the budget's floor.
  void Count(Outcome outcome);

  // Attempts made so far.
  int attempts() const { return attempts_; }
  TimePoint deadline() const { return deadline_; }

 private:
  friend class Retrier;
  Loop(const Retrier& retrier, TimePoint deadline) : retrier_(&retrier), deadline_(deadline) {}

  const Retrier* retrier_;
  TimePoint deadline_;
  int attempts_ = 0;
};

}  // namespace outbound::retry

#endif  // OUTBOUND_RETRY_RETRIER_H_
