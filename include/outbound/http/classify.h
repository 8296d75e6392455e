// SPDX-License-Identifier: Apache-2.0
// outbound/http/classify.h
//
// What each attempt's result means: whether another attempt follows, and
// whether it counts against the dependency. `DefaultClassify` follows RFC
// 9110; a client of an API that means something else wraps it:
//
// example: examples/headers/http.cc#classify
//   settings.classify = [](const Result<http::Response>& result) {
//     if (result && result->status == 409) {  // another write is in flight
//       return http::Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kSuccess};
//     }
//     return http::DefaultClassify(result);
//   };
//
// It may also take the request the attempt sent, for an answer whose
// meaning depends on it (a 404 that is a success for a DELETE):
//
// example: examples/headers/http.cc#classify-sent
//   settings.classify = [](const http::SentRequest& sent, const Result<http::Response>& result) {
//     if (sent.method == "DELETE" && result && result->status == 404) {
//       return http::Classification{};  // gone already: a success
//     }
//     return http::DefaultClassify(result);
//   };
//
// Classify is never asked about what the client decides itself: an attempt
// the breaker rejected, an error once the caller cancelled (Ignored) or the
// call's deadline passed (Failure), a body that failed mid-read (Failure).
// And whatever it says, an unsafe request is sent once, a retry_after over
// BackoffMax ends the call, and a response whose body exceeds 64 KiB is
// returned rather than retried.
#ifndef OUTBOUND_HTTP_CLASSIFY_H_
#define OUTBOUND_HTTP_CLASSIFY_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "outbound/circuit/breaker.h"
#include "outbound/error.h"
#include "outbound/http/message.h"
#include "outbound/retry/retrier.h"

namespace outbound::http {

struct Classification {
  retry::Outcome retry = retry::Outcome::kSuccess;
  // With kRetry: the least wait before the next attempt (a Retry-After).
  Duration retry_after{0};
  circuit::Outcome breaker = circuit::Outcome::kSuccess;
};

// The request an attempt sent, as classify sees it: after the attempt
// middleware, the absolute URL (no user info), the headers as given (not
// the trace headers the client adds). Views, valid during the call only.
struct SentRequest {
  std::string_view method;
  std::string_view url;
  // The request's own fields; the library's default User-Agent, which the
  // transport writes when the request names none, is not among them.
  const Headers& headers;
  // The answer's body went to the request's BodySink (Request::
  // StreamBodyTo), not into Response::body: a 2xx Response's body is then
  // empty whatever the server sent.
  bool body_streams = false;
};

// Gets the attempt's response (any status, body read) or its error, and
// the request it sent. Called once per attempt on a thread of the client's
// (its event loop, or the clock's), so it must be fast and thread-safe.
// What it throws reaches the caller, after the attempt's breaker slot is
// freed. Made from a function of the result alone, or of the request and
// the result; empty (null) is refused by the client's settings check.
class Classify {
 public:
  Classify() = default;
  Classify(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): as std::function
  template <typename F>
  requires std::is_invocable_r_v < Classification, const F&, const SentRequest&,
      const Result<Response>
  & > Classify(F f) : f_(std::move(f)) {}  // NOLINT(google-explicit-constructor)
  template <typename F>
  requires(std::is_invocable_r_v<Classification, const F&, const Result<Response>&> &&
           !std::is_invocable_v<const F&, const SentRequest&, const Result<Response>&>)
      Classify(F f)  // NOLINT(google-explicit-constructor)
      : f_([f = std::move(f)](const SentRequest&, const Result<Response>& result) {
          return f(result);
        }) {}

  Classification operator()(const SentRequest& sent, const Result<Response>& result) const {
    return f_(sent, result);
  }
  explicit operator bool() const { return static_cast<bool>(f_); }

 private:
  std::function<Classification(const SentRequest&, const Result<Response>&)> f_;
};

// The RFC 9110 table:
//   status < 500 except 408, 429   Success, Success
//   408                            Retry,   Success
//   429                            Retry after Retry-After, Success
//   500                            Stop,    Failure
//   502, 504                       Retry,   Failure
//   503                            Retry after Retry-After, Failure
//   other 5xx (501...)             Stop,    Success
//   untrusted certificate          Stop,    Failure
//   any other error                Retry,   Failure
// It reads only the status and headers, never the body.
Classification DefaultClassify(const Result<Response>& result);

// The longest wait ParseRetryAfter reports: 365 days. Any longer wait a
// server asks for (delay-seconds past 64 bits, a date in year 9999) is
// reported as this one, which is longer than any BackoffMax worth setting,
// so the retry loop ends the call with the response as it came; and it can
// be added to any time point a clock reads without overflow.
inline constexpr Duration kMaxRetryAfter = std::chrono::hours(24 * 365);

// A Retry-After value (RFC 9110 10.2.3) as a wait from `now`, at most
// kMaxRetryAfter:
//  - delay-seconds: one or more digits, nothing else ("120");
//  - an HTTP-date in any of the three forms a recipient must accept (RFC
//    9110 5.6.7): IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", and the
//    obsolete "Sunday, 06-Nov-94 08:49:37 GMT" (its year the latest one
//    not more than 50 years after `now`) and "Sun Nov  6 08:49:37 1994".
//    Case-sensitive, as the RFC says. A date in the past is a wait of 0.
// Whitespace around the value is ignored. Empty for anything else
// (negative, fractional, "+5", another date format), which the caller
// ignores. Every date a 4-digit year can write, and every `now`, is read
// without overflow.
std::optional<Duration> ParseRetryAfter(std::string_view value,
                                        std::chrono::system_clock::time_point now);

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_CLASSIFY_H_
