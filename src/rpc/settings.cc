// SPDX-License-Identifier: Apache-2.0
#include "outbound/rpc/settings.h"

#include <charconv>
#include <iterator>
#include <string>
#include <vector>

#include "../http/routes.h"
#include "address.h"
#include "exchange.h"
#include "outbound/internal/problems.h"

namespace outbound::rpc {
namespace {

Result<void> Positive(Duration d) {
  if (d <= Duration::zero()) return Fail(ErrorKind::kInvalidSettings, "must be positive");
  return {};
}

constexpr std::string_view kPushback = "grpc-retry-pushback-ms";

}  // namespace

std::optional<Duration> Pushback(const Trailers& trailers) {
  static const std::string key(kPushback);  // built once, not per attempt
  auto it = trailers.find(key);
  if (it == trailers.end()) return std::nullopt;
  const std::string& value = it->second;
  long long ms = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty() || ms < 0) {
    return Duration(-1);
  }
  // Anything beyond a day is as good as "never" and must not overflow.
  constexpr long long kDayMs = 24LL * 3600 * 1000;
  return std::chrono::milliseconds(std::min(ms, kDayMs));
}

Classification DefaultClassify(std::string_view, const Status& status, const Trailers& trailers) {
  using R = retry::Outcome;
  using B = circuit::Outcome;
  std::optional<Duration> pushback = Pushback(trailers);
  bool no_retry = pushback && *pushback < Duration::zero();
  Duration wait = pushback && !no_retry ? *pushback : Duration::zero();
  auto retry_unless_refused = [&](B breaker) {
    if (no_retry) return Classification{R::kStop, Duration::zero(), breaker};
    return Classification{R::kRetry, wait, breaker};
  };
  switch (status.code) {
    case Code::kOk:
      return {R::kSuccess, Duration::zero(), B::kSuccess};
    case Code::kUnavailable:
      return retry_unless_refused(B::kFailure);
    case Code::kResourceExhausted:
      if (pushback) return retry_unless_refused(B::kFailure);
      return {R::kStop, Duration::zero(), B::kFailure};
    case Code::kDeadlineExceeded:
    case Code::kInternal:
    case Code::kUnknown:
    case Code::kDataLoss:
      return {R::kStop, Duration::zero(), B::kFailure};
    case Code::kCancelled:
      return {R::kStop, Duration::zero(), B::kIgnored};
    default:
      return {R::kStop, Duration::zero(), B::kSuccess};
  }
}

Settings DefaultSettings() { return Settings{}; }

Result<void> CheckAddr(const std::string& addr) {
  if (addr.empty()) return Fail(ErrorKind::kInvalidSettings, "must be set");
  auto parsed = internal::ParseAddr(addr);
  if (!parsed) return Fail(ErrorKind::kInvalidSettings, parsed.error().message());
  return {};
}

Result<void> CheckTimeout(Duration timeout) { return Positive(timeout); }

Result<void> CheckAttemptTimeout(const std::optional<Duration>& attempt_timeout) {
  if (!attempt_timeout) return {};
  return Positive(*attempt_timeout);
}
Result<void> CheckBackoffBase(Duration backoff_base) { return Positive(backoff_base); }
Result<void> CheckBackoffMax(Duration backoff_max) { return Positive(backoff_max); }

Result<void> CheckMaxAttempts(int max_attempts) {
  if (max_attempts < 1) return Fail(ErrorKind::kInvalidSettings, "must be 1 or more");
  return {};
}

Result<void> CheckMethodName(const std::string& method) {
  std::size_t slash = method.find('/', 1);
  if (method.size() < 4 || method.front() != '/' || slash == std::string::npos || slash == 1 ||
      slash + 1 == method.size() || method.find('/', slash + 1) != std::string::npos) {
    return Fail(ErrorKind::kInvalidSettings,
                "\"" + method + "\" is not a method's full name (\"/pkg.Service/Method\")");
  }
  return {};
}

Result<void> CheckMaxConnectionAge(const std::optional<Duration>& age) {
  if (!age) return {};
  return Positive(*age);
}

Result<void> CheckMessageLimit(std::size_t bytes) {
  if (bytes < 1 || bytes > 0xFFFFFFFFu) {
    return Fail(ErrorKind::kInvalidSettings,
                "must be 1 to 4294967295 (what a message's length prefix can announce)");
  }
  return {};
}

std::string_view CodeName(Code code) {
  static constexpr std::string_view kNames[] = {"OK",
                                                "CANCELLED",
                                                "UNKNOWN",
                                                "INVALID_ARGUMENT",
                                                "DEADLINE_EXCEEDED",
                                                "NOT_FOUND",
                                                "ALREADY_EXISTS",
                                                "PERMISSION_DENIED",
                                                "RESOURCE_EXHAUSTED",
                                                "FAILED_PRECONDITION",
                                                "ABORTED",
                                                "OUT_OF_RANGE",
                                                "UNIMPLEMENTED",
                                                "INTERNAL",
                                                "UNAVAILABLE",
                                                "DATA_LOSS",
                                                "UNAUTHENTICATED"};
  auto i = static_cast<std::size_t>(code);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
}

namespace {

// Every wrong field of `methods`, as http::internal::RoutePolicyProblems
// has them: a name neither a method's nor a service's, or what a route
// would refuse.
std::vector<std::string> MethodProblems(const std::vector<MethodPolicy>& methods) {
  std::vector<std::string> problems;
  std::vector<bool> named(methods.size(), true);
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const std::string& name = methods[i].method;
    // A service, "/pkg.Service/": one name between two slashes.
    bool service = name.size() > 2 && name.front() == '/' && name.back() == '/' &&
                   name.find('/', 1) == name.size() - 1;
    if (service || CheckMethodName(name)) continue;
    named[i] = false;
    problems.push_back("[" + std::to_string(i) + "].method: \"" + name +
                       "\" is neither a method's full name (\"/pkg.Service/Method\") nor a "
                       "service's (\"/pkg.Service/\")");
  }
  for (std::string& problem : http::internal::RoutePolicyProblems(
           internal::CoreRoutes(methods, internal::kMaxFrameLength), "method")) {
    // A name refused above is not refused again as a route's prefix.
    std::size_t index = std::stoul(problem.substr(1));
    if (named[index] || problem.find("].method:") == std::string::npos) {
      problems.push_back(std::move(problem));
    }
  }
  return problems;
}

}  // namespace

Result<void> CheckMethods(const std::vector<MethodPolicy>& methods) {
  return outbound::internal::Refuse(MethodProblems(methods));
}

Result<void> Validate(const Settings& s) {
  std::vector<std::string> problems;
  auto check = [&](const char* field, const Result<void>& result) {
    if (!result) {
      problems.push_back(std::string("Settings.") + field + ": " + result.error().message());
    }
  };
  check("addr", CheckAddr(s.addr));
  check("tls", CheckTls(s.tls));
  check("timeout", CheckTimeout(s.timeout));
  check("attempt_timeout", CheckAttemptTimeout(s.attempt_timeout));
  check("max_attempts", CheckMaxAttempts(s.max_attempts));
  check("backoff_base", CheckBackoffBase(s.backoff_base));
  check("backoff_max", CheckBackoffMax(s.backoff_max));
  outbound::internal::AddBudgetAndBreakerProblems(s.retry_budget, s.breaker, problems);
  if (s.backoff_base > Duration::zero() && s.backoff_max > Duration::zero() &&
      s.backoff_max < s.backoff_base) {
    problems.push_back("Settings.backoff_max must be at least Settings.backoff_base");
  }
  for (const std::string& method : s.non_idempotent_methods) {
    check("non_idempotent_methods", CheckMethodName(method));
  }
  check("max_receive_message_bytes", CheckMessageLimit(s.max_receive_message_bytes));
  check("max_send_message_bytes", CheckMessageLimit(s.max_send_message_bytes));
  check("max_connection_age", CheckMaxConnectionAge(s.max_connection_age));
  check("balancing", http::CheckBalancing(s.balancing));
  check("rate_limit", http::CheckRateLimit(s.rate_limit));
  check("bulkhead", http::CheckBulkhead(s.bulkhead));
  check("adaptive_concurrency", http::CheckAdaptiveConcurrency(s.adaptive_concurrency));
  check("hedging", http::CheckHedging(s.hedging));
  outbound::internal::AddHedgingProblem(s.hedging, s.max_attempts, s.methods, problems);
  for (const std::string& method : MethodProblems(s.methods)) {
    problems.push_back("Settings.methods" + method);
  }
  if (!s.classify) problems.push_back("Settings.classify must be set");
  if (!s.breaker_policy.trip) problems.push_back("Settings.breaker_policy.trip must be set");
  if (!s.breaker_policy.probe) problems.push_back("Settings.breaker_policy.probe must be set");

  return outbound::internal::Refuse(problems);
}

}  // namespace outbound::rpc
