// SPDX-License-Identifier: Apache-2.0
// outbound/retry/reason.h
//
// Why the retry loop decided what it did after one attempt, in words a user
// can act on: `retry::DecisionKind` says what happened next (again,
// stopped, throttled...), a Reason says which rule made it so (the
// classifier, the budget, a request that is not safe to repeat...).
//
// It lives in the retry model, beside DecisionKind, rather than in the
// client's core, because both ends need one vocabulary: retry::Loop names
// the reasons of its own rules, the core adds its own (unsafe, too large,
// transparent...), and telemetry and AttemptRecord spell them the same way
// for HTTP and gRPC. Two bytes, no allocation: a success costs one store.
#ifndef OUTBOUND_RETRY_REASON_H_
#define OUTBOUND_RETRY_REASON_H_

#include <cstdint>
#include <string_view>

namespace outbound::retry {

enum class ReasonKind : std::uint8_t {
  kSuccess,            // the attempt succeeded
  kRetryable,          // the classifier said retry, and every rule allowed it
  kClassify,           // the classifier (or the client's own classification) said stop
  kExhausted,          // MaxAttempts are used
  kBudget,             // the retry budget refused the retry
  kDeadline,           // the wait would end after the call's deadline, or it passed
  kRetryAfterTooLong,  // the server asked for a wait longer than BackoffMax
  kUnsafe,             // not safe to repeat: a non-idempotent method, HTTP or gRPC
  kBodyNotReplayable,  // the request's body cannot be sent again
  kTooLarge,           // the answer's body is over the retried-body limit (64 KiB)
  kRejected,           // turned away before anything was sent (see Rejecter)
  kTransparent,        // sent again spending nothing: unprocessed (at once the first
                       // time, then after a backoff), taken down with its
                       // connection, or left out by a retired one (at once)
  kRepeat,             // a middleware asked for the request once more
  kCancelled,          // the caller gave up
  kHedge,              // a hedge: one more attempt started while the others wait for their
                       // answers (http::Hedging)
  kHedgeWon,           // another attempt of the call answered first, or a repeat replaced
                       // this one (a refreshed credential): it was cancelled
  kHedgeInFlight,      // failed while another attempt of the call is in flight: the call
                       // waits for that one instead of retrying
};

// Who turned a call away, for kRejected.
enum class Rejecter : std::uint8_t {
  kUnknown,
  kBreaker,              // the circuit breaker is open, or every probe slot is taken
  kBulkhead,             // too many calls in flight
  kRateLimit,            // the outbound rate limit
  kAdaptiveConcurrency,  // the adaptive concurrency limit
};

struct Reason {
  ReasonKind kind = ReasonKind::kSuccess;
  Rejecter by = Rejecter::kUnknown;  // kRejected only

  friend bool operator==(const Reason&, const Reason&) = default;
};

// Each in snake case, as telemetry writes it ("body_not_replayable",
// "rate_limit").
std::string_view ToString(ReasonKind kind);
std::string_view ToString(Rejecter by);
inline std::string_view ToString(Reason reason) { return ToString(reason.kind); }

}  // namespace outbound::retry

#endif  // OUTBOUND_RETRY_REASON_H_
