// SPDX-License-Identifier: Apache-2.0
// outbound/internal/problems.h
//
// How every settings check says all that is wrong at once: each problem
// found, joined into one kInvalidSettings error. Internal to the library's
// parts; not for users.
#ifndef OUTBOUND_INTERNAL_PROBLEMS_H_
#define OUTBOUND_INTERNAL_PROBLEMS_H_

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

// Adds to `problems` what is wrong with the retry budget and the breaker
// every client's settings hold, each as "Settings.retry_budget.max_tokens:
// why".
inline void AddBudgetAndBreakerProblems(const retry::BudgetConfig& budget,
                                        const circuit::Config& breaker,
                                        std::vector<std::string>& problems) {
  auto check = [&](const char* field, const Result<void>& result) {
    if (!result)
      problems.push_back(std::string("Settings.") + field + ": " + result.error().message());
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
