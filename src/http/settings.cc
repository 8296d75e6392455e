// SPDX-License-Identifier: Apache-2.0
#include "outbound/http/settings.h"

#include <arpa/inet.h>

#include <cmath>
#include <string>
#include <vector>

#include "origin.h"
#include "outbound/internal/problems.h"
#include "routes.h"

namespace outbound::http {
namespace {

Result<void> Positive(Duration d) {
  if (d <= Duration::zero()) return Fail(ErrorKind::kInvalidSettings, "must be positive");
  return {};
}

}  // namespace

Settings DefaultSettings() { return Settings{}; }

Result<void> CheckBaseUrl(const std::string& url) {
  if (url.empty()) return Fail(ErrorKind::kInvalidSettings, "must be set");
  auto parsed = internal::ParseUrl(url);
  if (!parsed) return Fail(ErrorKind::kInvalidSettings, parsed.error().message());
  if (parsed->has_user_info) {
    return Fail(ErrorKind::kInvalidSettings,
                "must not hold user info: credentials go in a header, not in a setting");
  }
  if (parsed->has_query) return Fail(ErrorKind::kInvalidSettings, "must not have a query");
  if (parsed->has_fragment) return Fail(ErrorKind::kInvalidSettings, "must not have a fragment");
  return {};
}

Result<void> CheckTls(const std::optional<TlsSettings>& tls) {
  if (!tls) return {};
  if (tls->client_cert_pem.empty() != tls->client_key_pem.empty()) {
    return Fail(ErrorKind::kInvalidSettings,
                "a client certificate needs its key, and a key its certificate");
  }
  for (const std::string* pem : {&tls->root_pem, &tls->client_cert_pem}) {
    if (!pem->empty() && pem->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return Fail(ErrorKind::kInvalidSettings, "holds no PEM certificate");
    }
  }
  if (!tls->client_key_pem.empty() &&
      tls->client_key_pem.find("PRIVATE KEY-----") == std::string::npos) {
    return Fail(ErrorKind::kInvalidSettings, "holds no PEM private key");
  }
  // PKCS#8's "BEGIN ENCRYPTED PRIVATE KEY", or a traditional key's
  // "Proc-Type: 4,ENCRYPTED": the library asks nobody for a passphrase.
  if (tls->client_key_pem.find("ENCRYPTED") != std::string::npos) {
    return Fail(ErrorKind::kInvalidSettings,
                "holds an encrypted private key: give the key unencrypted (no passphrase is asked "
                "for)");
  }
  return {};
}

Result<void> CheckTimeout(Duration timeout) { return Positive(timeout); }
Result<void> CheckAttemptTimeout(Duration attempt_timeout) { return Positive(attempt_timeout); }
Result<void> CheckBackoffBase(Duration backoff_base) { return Positive(backoff_base); }
Result<void> CheckBackoffMax(Duration backoff_max) { return Positive(backoff_max); }

Result<void> CheckMaxAttempts(int max_attempts) {
  if (max_attempts < 1) return Fail(ErrorKind::kInvalidSettings, "must be 1 or more");
  return {};
}

Result<void> CheckRoutes(const std::vector<RoutePolicy>& routes) {
  return outbound::internal::Refuse(internal::RoutePolicyProblems(routes, "path_prefix"));
}

Result<void> CheckMaxResponseBytes(std::size_t bytes) {
  if (bytes == 0) return Fail(ErrorKind::kInvalidSettings, "must be positive");
  return {};
}

Result<void> CheckMaxConnections(int n) {
  if (n < 1 || n > 10000) return Fail(ErrorKind::kInvalidSettings, "must be from 1 to 10000");
  return {};
}

Result<void> CheckMaxConnectionAge(const std::optional<Duration>& age) {
  if (!age) return {};
  return Positive(*age);
}

Result<void> CheckRateLimit(const std::optional<RateLimit>& limit) {
  if (!limit) return {};
  // Written so a NaN fails too.
  if (!(limit->per_second > 0) || std::isinf(limit->per_second)) {
    return Fail(ErrorKind::kInvalidSettings,
                "the rate must be a positive number of calls a second");
  }
  if (limit->burst < 1) return Fail(ErrorKind::kInvalidSettings, "the burst must be 1 or more");
  return {};
}

Result<void> CheckBulkhead(const std::optional<Bulkhead>& bulkhead) {
  if (!bulkhead) return {};
  if (bulkhead->max_calls < 1 || bulkhead->max_calls > 100000) {
    return Fail(ErrorKind::kInvalidSettings, "the calls in flight must be from 1 to 100000");
  }
  if (bulkhead->max_queued < 0 || bulkhead->max_queued > 100000) {
    return Fail(ErrorKind::kInvalidSettings, "the calls queued must be from 0 to 100000");
  }
  if (bulkhead->max_queued > 0 && bulkhead->max_wait <= Duration::zero()) {
    return Fail(ErrorKind::kInvalidSettings, "a queue needs a positive wait");
  }
  return {};
}

Result<void> CheckAdaptiveConcurrency(const std::optional<AdaptiveConcurrency>& adaptive) {
  if (!adaptive) return {};
  const AdaptiveConcurrency& a = *adaptive;
  if (a.min_limit < 1 || a.max_limit > 100000 || a.min_limit > a.max_limit) {
    return Fail(ErrorKind::kInvalidSettings,
                "the limits must be 1 <= min_limit <= max_limit <= 100000 (min_limit " +
                    std::to_string(a.min_limit) + ", max_limit " + std::to_string(a.max_limit) +
                    ")");
  }
  if (a.initial_limit < a.min_limit || a.initial_limit > a.max_limit) {
    return Fail(ErrorKind::kInvalidSettings,
                "initial_limit " + std::to_string(a.initial_limit) + " must be from min_limit " +
                    std::to_string(a.min_limit) + " to max_limit " + std::to_string(a.max_limit));
  }
  if (a.sample_window < std::chrono::milliseconds(1) || a.sample_window > std::chrono::minutes(1)) {
    return Fail(ErrorKind::kInvalidSettings, "the sample window must be from 1ms to 1m");
  }
  return {};
}

Result<void> CheckBalancing(const std::optional<Balancing>& balancing) {
  if (!balancing) return {};
  const Balancing& b = *balancing;
  for (const Endpoint& e : b.endpoints) {
    in6_addr ip{};
    bool literal = inet_pton(AF_INET, e.address.c_str(), &ip) == 1 ||
                   inet_pton(AF_INET6, e.address.c_str(), &ip) == 1;
    if (!literal || e.port == 0) {
      return Fail(ErrorKind::kInvalidSettings, "endpoint \"" + e.address + ":" +
                                                   std::to_string(e.port) +
                                                   "\" is not an IP address and a port");
    }
  }
  if (b.re_resolve_every < std::chrono::seconds(1) || b.re_resolve_every > std::chrono::hours(24)) {
    return Fail(ErrorKind::kInvalidSettings, "re_resolve_every must be from 1s to 24h");
  }
  const OutlierDetection& o = b.outlier_detection;
  if (o.consecutive_failures < 0) {
    return Fail(ErrorKind::kInvalidSettings, "consecutive_failures must be 0 (off) or more");
  }
  if (o.base_ejection <= Duration::zero() || o.max_ejection < o.base_ejection) {
    return Fail(ErrorKind::kInvalidSettings,
                "the ejection times must be positive, base_ejection <= max_ejection");
  }
  // Written so a NaN fails too.
  if (!(o.max_ejected_share >= 0 && o.max_ejected_share <= 1)) {
    return Fail(ErrorKind::kInvalidSettings, "max_ejected_share must be from 0 to 1");
  }
  return {};
}

Result<void> CheckHedging(const std::optional<Hedging>& hedging) {
  if (!hedging) return {};
  const Hedging& h = *hedging;
  if (h.delay < std::chrono::milliseconds(1) || h.delay > std::chrono::hours(1)) {
    return Fail(ErrorKind::kInvalidSettings, "the delay must be from 1ms to 1h");
  }
  if (h.percentile && !(*h.percentile >= 0.5 && *h.percentile <= 0.999)) {
    return Fail(ErrorKind::kInvalidSettings, "the percentile must be from 0.5 to 0.999");
  }
  if (h.max_attempts_in_flight < 2 || h.max_attempts_in_flight > 10) {
    return Fail(ErrorKind::kInvalidSettings, "the attempts in flight must be from 2 to 10");
  }
  if (!(h.max_extra_share > 0 && h.max_extra_share <= 1)) {
    return Fail(ErrorKind::kInvalidSettings, "the extra share must be above 0 and at most 1");
  }
  return {};
}

Result<void> Validate(const Settings& s) {
  std::vector<std::string> problems;
  auto check = [&](const char* field, const Result<void>& result) {
    if (!result) {
      problems.push_back(std::string("Settings.") + field + ": " + result.error().message());
    }
  };
  check("base_url", CheckBaseUrl(s.base_url));
  check("tls", CheckTls(s.tls));
  check("timeout", CheckTimeout(s.timeout));
  check("attempt_timeout", CheckAttemptTimeout(s.attempt_timeout));
  check("max_attempts", CheckMaxAttempts(s.max_attempts));
  check("backoff_base", CheckBackoffBase(s.backoff_base));
  check("backoff_max", CheckBackoffMax(s.backoff_max));
  outbound::internal::AddBudgetAndBreakerProblems(s.retry_budget, s.breaker, problems);
  check("max_response_bytes", CheckMaxResponseBytes(s.max_response_bytes));
  check("max_error_response_bytes", CheckMaxResponseBytes(s.max_error_response_bytes));
  check("max_connections", CheckMaxConnections(s.max_connections));
  check("max_connection_age", CheckMaxConnectionAge(s.max_connection_age));
  check("rate_limit", CheckRateLimit(s.rate_limit));
  check("bulkhead", CheckBulkhead(s.bulkhead));
  check("adaptive_concurrency", CheckAdaptiveConcurrency(s.adaptive_concurrency));
  check("balancing", CheckBalancing(s.balancing));
  check("hedging", CheckHedging(s.hedging));
  outbound::internal::AddHedgingProblem(s.hedging, s.max_attempts, s.routes, problems);
  for (const std::string& route : internal::RoutePolicyProblems(s.routes, "path_prefix")) {
    problems.push_back("Settings.routes" + route);
  }

  if (s.backoff_base > Duration::zero() && s.backoff_max > Duration::zero() &&
      s.backoff_max < s.backoff_base) {
    problems.push_back("Settings.backoff_max must be at least Settings.backoff_base");
  }
  if (auto parsed = internal::ParseUrl(s.base_url)) {
    bool https = parsed->origin.scheme == "https";
    if (https && !s.tls) {
      problems.push_back("Settings.tls must be set for an https Settings.base_url");
    }
    if (!https && s.tls) {
      problems.push_back("Settings.tls must be empty for an http Settings.base_url");
    }
    if (https && s.http2_prior_knowledge) {
      problems.push_back(
          "Settings.http2_prior_knowledge is for an http Settings.base_url: over https, "
          "ALPN chooses HTTP/2");
    }
  }
  if (!s.classify) problems.push_back("Settings.classify must be set");
  if (!s.breaker_policy.trip) problems.push_back("Settings.breaker_policy.trip must be set");
  if (!s.breaker_policy.probe) problems.push_back("Settings.breaker_policy.probe must be set");
  for (std::size_t i = 0; i < s.observers.size(); ++i) {
    if (!s.observers[i]) {
      problems.push_back("Settings.observers[" + std::to_string(i) + "] is null");
    }
  }
  for (std::size_t i = 0; i < s.call_middleware.size(); ++i) {
    if (!s.call_middleware[i]) {
      problems.push_back("Settings.call_middleware[" + std::to_string(i) + "] is null");
    }
  }
  for (std::size_t i = 0; i < s.attempt_middleware.size(); ++i) {
    if (!s.attempt_middleware[i]) {
      problems.push_back("Settings.attempt_middleware[" + std::to_string(i) + "] is null");
    }
  }

  return outbound::internal::Refuse(problems);
}

namespace {

class AttemptFunction final : public Observer {
 public:
  explicit AttemptFunction(std::function<void(const AttemptRecord&)> fn) : fn_(std::move(fn)) {}
  void OnAttempt(const AttemptRecord& record) override { fn_(record); }

 private:
  std::function<void(const AttemptRecord&)> fn_;
};

class TransitionFunction final : public Observer {
 public:
  explicit TransitionFunction(std::function<void(const circuit::Transition&)> fn)
      : fn_(std::move(fn)) {}
  void OnBreakerTransition(const circuit::Transition& transition) override { fn_(transition); }

 private:
  std::function<void(const circuit::Transition&)> fn_;
};

}  // namespace

std::shared_ptr<Observer> ObserveAttempts(std::function<void(const AttemptRecord&)> on_attempt) {
  return std::make_shared<AttemptFunction>(std::move(on_attempt));
}

std::shared_ptr<Observer> ObserveTransitions(
    std::function<void(const circuit::Transition&)> on_transition) {
  return std::make_shared<TransitionFunction>(std::move(on_transition));
}

}  // namespace outbound::http
