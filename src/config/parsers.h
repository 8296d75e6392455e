// SPDX-License-Identifier: Apache-2.0
// Parsers and check adapters both settings readers use
// (http_settings.cc, rpc_settings.cc), so each rule is written once.
#ifndef OUTBOUND_SRC_CONFIG_PARSERS_H_
#define OUTBOUND_SRC_CONFIG_PARSERS_H_

#include <optional>
#include <string>

#include "outbound/circuit/breaker.h"
#include "outbound/clock.h"
#include "outbound/config/resolver.h"
#include "outbound/http/settings.h"
#include "outbound/retry/budget.h"

namespace outbound::config::internal {

// Adapts a check on a plain value to Resolver's Check<T>.
template <typename T>
Check<T> Checking(Result<void> (*check)(T)) {
  return [check](const T& value) { return check(value); };
}

// "on" or "off".
// The retry budget's and the breaker's variables, which every client's
// settings have (PREFIX_RETRY_BUDGET_*, PREFIX_BREAKER_*): each read over
// what `budget` and `breaker` hold.
inline void ReadBudgetAndBreaker(Resolver& r, const std::string& prefix,
                                 retry::BudgetConfig& budget, circuit::Config& breaker) {
  auto name = [&](const char* field) { return prefix + field; };
  Parser<Duration> duration = ParseDuration;
  Parser<int> integer = ParseInt;
  Parser<double> number = ParseDouble;
  budget.max_tokens = r.Get(name("RETRY_BUDGET_MAX_TOKENS"), integer,
                            std::optional(budget.max_tokens), Checking(retry::CheckMaxTokens));
  budget.token_ratio = r.Get(name("RETRY_BUDGET_TOKEN_RATIO"), number,
                             std::optional(budget.token_ratio), Checking(retry::CheckTokenRatio));
  budget.min_retries_per_second = r.Get(name("RETRY_BUDGET_MIN_PER_SECOND"), number,
                                        std::optional(budget.min_retries_per_second),
                                        Checking(retry::CheckMinRetriesPerSecond));
  breaker.window = r.Get(name("BREAKER_WINDOW"), integer, std::optional(breaker.window),
                         Checking(circuit::CheckWindow));
  breaker.probes = r.Get(name("BREAKER_PROBES"), integer, std::optional(breaker.probes),
                         Checking(circuit::CheckProbes));
  breaker.open_for = r.Get(name("BREAKER_OPEN_FOR"), duration, std::optional(breaker.open_for),
                           Checking(circuit::CheckOpenFor));
  breaker.probe_timeout =
      r.Get(name("BREAKER_PROBE_TIMEOUT"), duration, std::optional(breaker.probe_timeout),
            Checking(circuit::CheckProbeTimeout));
  breaker.initial_open_for =
      r.Get(name("BREAKER_INITIAL_OPEN_FOR"), duration, std::optional(breaker.initial_open_for),
            Checking(circuit::CheckInitialOpenFor));
  breaker.calls_per_probe =
      r.Get(name("BREAKER_CALLS_PER_PROBE"), integer, std::optional(breaker.calls_per_probe),
            Checking(circuit::CheckCallsPerProbe));
  breaker.slow_call = r.Get(name("BREAKER_SLOW_CALL"), duration, std::optional(breaker.slow_call),
                            Checking(circuit::CheckSlowCall));
}

inline Result<bool> ParseOnOff(const std::string& text) {
  if (text == "on") return true;
  if (text == "off") return false;
  return Fail(ErrorKind::kInvalidSettings, "must be on or off");
}

// A whole number of bytes.
inline Result<std::size_t> ParseSize(const std::string& text) {
  auto bad = [&] {
    return Fail(ErrorKind::kInvalidSettings, "\"" + text + "\" is not a whole number");
  };
  if (text.empty() || text.size() > 19) return bad();
  std::size_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad();
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  return value;
}

// A duration, or "off" (nullopt): Settings::max_connection_age.
inline Result<std::optional<Duration>> ParseDurationOrOff(const std::string& text) {
  if (text == "off") return std::optional<Duration>();
  Result<Duration> d = ParseDuration(text);
  if (!d) {
    return Fail(ErrorKind::kInvalidSettings,
                "\"" + text + "\" is not a duration such as 30m or 1h, or off");
  }
  return std::optional(*d);
}

// PREFIX + MAX_CONNECTION_AGE, over `age`, checked by `check`.
inline std::optional<Duration> ReadMaxConnectionAge(
    Resolver& r, const std::string& prefix, const std::optional<Duration>& age,
    Result<void> (*check)(const std::optional<Duration>&)) {
  return r.Get(prefix + "MAX_CONNECTION_AGE", Parser<std::optional<Duration>>(ParseDurationOrOff),
               std::optional<std::optional<Duration>>(age), Check<std::optional<Duration>>(check));
}
// "50/s" or "50/s,10" (a burst of 10), or "off" (nullopt): what
// PREFIX_RATE_LIMIT and a runtime file's rate_limit say.
[[nodiscard]] Result<std::optional<http::RateLimit>> ParseRateLimit(const std::string& text);

// The limits on a client's calls, which HTTP and gRPC settings both have
// (PREFIX_RATE_LIMIT, PREFIX_BULKHEAD, PREFIX_ADAPTIVE_CONCURRENCY*), each
// read over what it holds: http_settings.cc.
void ReadCallLimits(Resolver& r, const std::string& prefix,
                    std::optional<http::RateLimit>& rate_limit,
                    std::optional<http::Bulkhead>& bulkhead,
                    std::optional<http::AdaptiveConcurrency>& adaptive);
// Hedging, which HTTP and gRPC settings both have (PREFIX_HEDGING*), read
// over what it holds, and refused beside a MAX_ATTEMPTS of 1 (no hedge
// could go): http_settings.cc.
void ReadHedging(Resolver& r, const std::string& prefix, int max_attempts,
                 std::optional<http::Hedging>& hedging);

// The backoff's base at most its maximum, which HTTP and gRPC settings
// both ask, judged on the values read (a base set over the default
// maximum fails too), naming the variables set: http_settings.cc.
void CheckBackoff(Resolver& r, const std::string& prefix, Duration base, Duration max);

// Several endpoints, which HTTP and gRPC settings both have
// (PREFIX_BALANCING, PREFIX_ENDPOINTS, PREFIX_RE_RESOLVE_EVERY,
// PREFIX_OUTLIER_CONSECUTIVE_FAILURES, PREFIX_OUTLIER_BASE_EJECTION),
// read over what `balancing` holds: http_settings.cc.
void ReadBalancing(Resolver& r, const std::string& prefix,
                   std::optional<http::Balancing>& balancing);

// TLS files, which HTTP and gRPC settings both have (PREFIX_CA_FILE,
// PREFIX_CERT_FILE, PREFIX_KEY_FILE), read over `d` (none: the system's
// roots, no client certificate) and checked: http_settings.cc.
http::TlsSettings ReadTls(Resolver& r, const std::string& prefix,
                          const std::optional<http::TlsSettings>& d);

// The names ReadBalancing reads, after PREFIX_.
inline constexpr const char* kBalancingFields[] = {"BALANCING", "ENDPOINTS", "RE_RESOLVE_EVERY",
                                                   "OUTLIER_CONSECUTIVE_FAILURES",
                                                   "OUTLIER_BASE_EJECTION"};

}  // namespace outbound::config::internal

#endif  // OUTBOUND_SRC_CONFIG_PARSERS_H_
