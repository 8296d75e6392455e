// SPDX-License-Identifier: Apache-2.0
#include "outbound/config/rpc_settings.h"

#include <algorithm>
#include <string>
#include <vector>

#include "outbound/config/http_settings.h"
#include "parsers.h"

namespace outbound::config {
namespace {

using internal::Checking;
using internal::ParseOnOff;
using internal::ParseSize;

Result<std::string> ParseText(const std::string& text) { return text; }

constexpr const char* kFields[] = {
    "ADDR",
    "TIMEOUT",
    "MAX_ATTEMPTS",
    "BACKOFF_BASE",
    "BACKOFF_MAX",
    "RETRY_BUDGET_MAX_TOKENS",
    "RETRY_BUDGET_TOKEN_RATIO",
    "RETRY_BUDGET_MIN_PER_SECOND",
    "BREAKER_WINDOW",
    "BREAKER_PROBES",
    "BREAKER_OPEN_FOR",
    "BREAKER_PROBE_TIMEOUT",
    "BREAKER_INITIAL_OPEN_FOR",
    "BREAKER_CALLS_PER_PROBE",
    "BREAKER_SLOW_CALL",
    "TLS",
    "CA_FILE",
    "CERT_FILE",
    "KEY_FILE",
    "FAULTS",
    "NON_IDEMPOTENT_METHODS",
    "MAX_RECEIVE_MESSAGE_BYTES",
    "MAX_SEND_MESSAGE_BYTES",
    "GZIP_REQUESTS",
    "MAX_CONNECTION_AGE",
    "ATTEMPT_TIMEOUT",
    "RATE_LIMIT",
    "BULKHEAD",
    "ADAPTIVE_CONCURRENCY",
    "ADAPTIVE_CONCURRENCY_INITIAL_LIMIT",
    "ADAPTIVE_CONCURRENCY_MIN_LIMIT",
    "ADAPTIVE_CONCURRENCY_MAX_LIMIT",
    "ADAPTIVE_CONCURRENCY_SAMPLE_WINDOW",
    "BALANCING",
    "ENDPOINTS",
    "RE_RESOLVE_EVERY",
    "OUTLIER_CONSECUTIVE_FAILURES",
    "OUTLIER_BASE_EJECTION",
    "HEDGING",
    "HEDGING_DELAY",
    "HEDGING_PERCENTILE",
    "HEDGING_MAX_IN_FLIGHT",
    "HEDGING_MAX_EXTRA",
};

// "/a.B/C,/a.B/D": a comma-separated list of method names, each checked.
Result<std::vector<std::string>> ParseMethods(const std::string& text) {
  std::vector<std::string> methods;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = std::min(text.find(',', start), text.size());
    std::string method = text.substr(start, comma - start);
    std::erase(method, ' ');
    if (!method.empty()) {
      if (auto ok = rpc::CheckMethodName(method); !ok) return tl::unexpected(ok.error());
      methods.push_back(std::move(method));
    }
    start = comma + 1;
  }
  return methods;
}

}  // namespace

std::vector<std::string> RpcSettingsVariables(const std::string& prefix) {
  std::vector<std::string> names;
  for (const char* field : kFields) names.push_back(prefix + field);
  return names;
}

rpc::Settings ReadRpcSettings(Resolver& r, const std::string& prefix, rpc::Settings d) {
  rpc::Settings s = d;
  auto name = [&](const char* field) { return prefix + field; };
  // Any other variable under the prefix is a mistake (a misspelling) that
  // Finish names.
  r.ClaimPrefix(prefix, RpcSettingsVariables(prefix));
  Parser<Duration> duration = ParseDuration;
  Parser<int> integer = ParseInt;
  Parser<double> number = ParseDouble;

  std::optional<std::string> addr_fallback;
  if (!d.addr.empty()) addr_fallback = d.addr;
  s.addr = r.Get(name("ADDR"), Parser<std::string>(ParseText), addr_fallback,
                 Check<std::string>(rpc::CheckAddr));
  s.timeout =
      r.Get(name("TIMEOUT"), duration, std::optional(d.timeout), Checking(rpc::CheckTimeout));
  s.max_attempts = r.Get(name("MAX_ATTEMPTS"), integer, std::optional(d.max_attempts),
                         Checking(rpc::CheckMaxAttempts));
  s.backoff_base = r.Get(name("BACKOFF_BASE"), duration, std::optional(d.backoff_base),
                         Checking(rpc::CheckBackoffBase));
  s.backoff_max = r.Get(name("BACKOFF_MAX"), duration, std::optional(d.backoff_max),
                        Checking(rpc::CheckBackoffMax));
  internal::ReadBudgetAndBreaker(r, prefix, s.retry_budget, s.breaker);
  s.faults.enabled =
      r.Get(name("FAULTS"), Parser<bool>(ParseOnOff), std::optional(d.faults.enabled));
  s.non_idempotent_methods =
      r.Get(name("NON_IDEMPOTENT_METHODS"), Parser<std::vector<std::string>>(ParseMethods),
            std::optional(d.non_idempotent_methods));
  s.max_receive_message_bytes =
      r.Get(name("MAX_RECEIVE_MESSAGE_BYTES"), Parser<std::size_t>(ParseSize),
            std::optional(d.max_receive_message_bytes), Checking(rpc::CheckMessageLimit));
  s.max_send_message_bytes =
      r.Get(name("MAX_SEND_MESSAGE_BYTES"), Parser<std::size_t>(ParseSize),
            std::optional(d.max_send_message_bytes), Checking(rpc::CheckMessageLimit));
  s.gzip_requests =
      r.Get(name("GZIP_REQUESTS"), Parser<bool>(ParseOnOff), std::optional(d.gzip_requests));
  s.max_connection_age =
      internal::ReadMaxConnectionAge(r, prefix, d.max_connection_age, rpc::CheckMaxConnectionAge);
  s.attempt_timeout =
      r.Get(name("ATTEMPT_TIMEOUT"), Parser<std::optional<Duration>>(internal::ParseDurationOrOff),
            std::optional<std::optional<Duration>>(d.attempt_timeout),
            Check<std::optional<Duration>>(rpc::CheckAttemptTimeout));
  internal::ReadCallLimits(r, prefix, s.rate_limit, s.bulkhead, s.adaptive_concurrency);
  internal::ReadBalancing(r, prefix, s.balancing);
  internal::ReadHedging(r, prefix, s.max_attempts, s.hedging);
  internal::CheckBackoff(r, prefix, s.backoff_base, s.backoff_max);

  // No scheme says TLS or plain text here, as an http or https URL does:
  // TLS is its own variable, and the defaults' choice when it is unset.
  bool tls_on = r.Get(name("TLS"), Parser<bool>(ParseOnOff), std::optional(d.tls.has_value()));
  if (tls_on) {
    s.tls = internal::ReadTls(r, prefix, d.tls);
  } else {
    s.tls.reset();
    // A TLS file with TLS off would be ignored, and the calls made in plain
    // text: each one set is named, with what turned TLS off.
    std::string said = r.Has(name("TLS")) ? name("TLS") + " is off"
                                          : "TLS is off (" + name("TLS") +
                                                " is unset, and plain text the default)";
    for (const char* field : {"CA_FILE", "CERT_FILE", "KEY_FILE"}) {
      if (r.Has(name(field))) {
        r.Fail(name(field) + ": set, but " + said + ": set " + name("TLS") + "=on for TLS");
      }
    }
  }
  return s;
}

}  // namespace outbound::config
