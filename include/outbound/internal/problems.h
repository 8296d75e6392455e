// SPDX-License-Identifier: Apache-2.0
// outbound/internal/problems.h
//
// How every settings check says all that is wrong at once: each problem
// found, joined into one kInvalidSettings error. Internal to the library's
// parts; not for users.
#ifndef OUTBOUND_INTERNAL_PROBLEMS_H_
#define OUTBOUND_INTERNAL_PROBLEMS_H_

#include <optional>
#include <string>
#include <vector>

#include "outbound/circuit/breaker.h"
#include "outbound/error.h"
#include "outbound/retry/budget.h"

namespace outbound::internal {

// kInvalidSettings naming each of `problems` ("a; b"); nothing if none.
inline Result<void> Refuse(const std::vector<std::string>& problems) {
  if (problems.empty()) return {};
  std::string message;
  for (const std::string& problem : problems) {
    if (!message.empty()) message += "; ";
    message += problem;
  }
  return Fail(ErrorKind::kInvalidSettings, message);
}

// Adds to `problems` that hedging is on where no call may make a second
// attempt: `max_attempts` is 1 and none of `policies` (routes or methods,
// each with an optional max_attempts) raises it. A hedge is an attempt.
template <class Hedging, class Policies>
void AddHedgingProblem(const std::optional<Hedging>& hedging, int max_attempts,
                       const Policies& policies, std::vector<std::string>& problems) {
  if (!hedging || max_attempts != 1) return;
  for (const auto& policy : policies) {
    if (policy.max_attempts.value_or(1) > 1) return;
  }
  problems.push_back(
      "Settings.hedging: max_attempts is 1 and a hedge is an attempt: raise max_attempts, or "
      "set hedging to std::nullopt");
}

// Adds to `problems` what is wrong with the retry budget and the breaker
// every client's settings hold, each as "Settings.retry_budget.max_tokens:
// why".
inline void AddBudgetAndBreakerProblems(const retry::BudgetConfig& budget,
                                        const circuit::Config& breaker,
                                        std::vector<std::string>& problems) {
  auto check = [&](const char* field, const Result<void>& result) {
    if (!result) {
      problems.push_back(std::string("Settings.") + field + ": " + result.error().message());
    }
  };
  check("retry_budget.max_tokens", retry::CheckMaxTokens(budget.max_tokens));
  check("retry_budget.token_ratio", retry::CheckTokenRatio(budget.token_ratio));
  check("retry_budget.min_retries_per_second",
        retry::CheckMinRetriesPerSecond(budget.min_retries_per_second));
  check("breaker.window", circuit::CheckWindow(breaker.window));
  check("breaker.probes", circuit::CheckProbes(breaker.probes));
  check("breaker.open_for", circuit::CheckOpenFor(breaker.open_for));
  check("breaker.probe_timeout", circuit::CheckProbeTimeout(breaker.probe_timeout));
  check("breaker.initial_open_for", circuit::CheckInitialOpenFor(breaker.initial_open_for));
  check("breaker.calls_per_probe", circuit::CheckCallsPerProbe(breaker.calls_per_probe));
  check("breaker.slow_call", circuit::CheckSlowCall(breaker.slow_call));
}

}  // namespace outbound::internal

#endif  // OUTBOUND_INTERNAL_PROBLEMS_H_
