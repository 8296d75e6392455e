// SPDX-License-Identifier: Apache-2.0
// outbound/error.h
//
// The errors a call can end with, as values. A failure that is a normal
// outcome of calling a dependency (a timeout, a refusal, a 503 the retries
// could not get past, a breaker rejection) is an `Error` inside a `Result`,
// never an exception. Callers switch on `kind()`; they never parse `message()`.
//
// example: examples/headers/core.cc#error
//   Result<Response> resp = payments.Send(std::move(request));
//   if (!resp) {
//     switch (resp.error().kind()) {
//       case ErrorKind::kRejected:  // nothing was sent
//         return Unavailable(resp.error().retry_after());
//       case ErrorKind::kDeadline:  // no answer in time
//         return 75;
//       default:
//         return 1;
//     }
//   }
//
// `Result<T>` is `tl::expected<T, Error>`, the shape of C++23's
// `std::expected`, so moving to the standard type later is one alias.
#ifndef OUTBOUND_ERROR_H_
#define OUTBOUND_ERROR_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

namespace outbound {

// What went wrong, for a caller to switch on.
enum class ErrorKind {
  // The caller cancelled the call.
  kCancelled,
  // The call's deadline passed: its Timeout, or an earlier one the caller set.
  kDeadline,
  // The connection failed: refused, reset, name resolution, TLS handshake.
  kTransport,
  // The server's certificate is not one the client trusts.
  kTlsUntrusted,
  // The circuit breaker rejected the attempt: nothing was sent.
  // `retry_after()` says how much longer the breaker stays open.
  kRejected,
  // The request was for an origin other than the client's: nothing was sent.
  kOriginRefused,
  // The response's body was larger than the client accepts.
  kResponseTooLarge,
  // The response could not be understood (malformed status line, headers...).
  kInvalidResponse,
  // The request cannot be sent as it is (a CR or LF in a header value...).
  kInvalidRequest,
  // A setting is out of range or missing; returned when building a client.
  kInvalidSettings,
  // Redirects within the origin went on past the limit (10): the last 3xx
  // is dropped rather than returned as if it were the answer.
  kTooManyRedirects,
  // This process ran out of something it needed to make the attempt (file
  // descriptors, memory, threads): not the dependency's failure, so the
  // breaker does not count it and it is not retried.
  kLocalResource,
  // The response's status was not one the caller accepts: made only by the
  // caller's own choice (http::Require2xx), never by a call on its own,
  // which returns every status as a response.
  kHttpStatus,
};

// The kind's name in snake case, as it appears in telemetry ("deadline").
std::string_view ToString(ErrorKind kind);

// Why a call or a check failed. A value type: cheap to move, safe to copy.
class Error {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  ErrorKind kind() const { return kind_; }

  // What went wrong, for a person: the last underlying cause included.
  const std::string& message() const { return message_; }

  // The attempts the call made before it ended with this error (0 when
  // nothing was sent, as for an origin refusal).
  int attempts() const { return attempts_; }
  Error& set_attempts(int n) {
    attempts_ = n;
    return *this;
  }

  // For kTransport: the HTTP/2 error code the server reset the attempt's
  // stream with (RST_STREAM), when that is what ended it. gRPC gives each
  // code a status of its own.
  std::optional<std::uint32_t> stream_reset_code() const { return stream_reset_code_; }
  Error& set_stream_reset_code(std::uint32_t code) {
    stream_reset_code_ = code;
    return *this;
  }

  // For kRejected: how much longer the breaker stays open. Otherwise empty.
  std::optional<std::chrono::nanoseconds> retry_after() const { return retry_after_; }
  Error& set_retry_after(std::chrono::nanoseconds d) {
    retry_after_ = d;
    return *this;
  }

 private:
  ErrorKind kind_;
  std::string message_;
  int attempts_ = 0;
  std::optional<std::chrono::nanoseconds> retry_after_;
  std::optional<std::uint32_t> stream_reset_code_;
};

// A value, or the Error that stands in its place.
template <typename T>
using Result = tl::expected<T, Error>;

// Shorthand for building the error side of a Result.
inline tl::unexpected<Error> Fail(ErrorKind kind, std::string message) {
  return tl::unexpected<Error>(Error(kind, std::move(message)));
}

// The exception that carries an Error, for code that would rather throw
// than check: what OrThrow and http::Client::CreateOrThrow throw. what() is
// the error's message.
class Exception : public std::runtime_error {
 public:
  explicit Exception(Error error) : std::runtime_error(error.message()), error_(std::move(error)) {}
  const Error& error() const noexcept { return error_; }

 private:
  Error error_;
};

// The value of `result`, or an Exception carrying its error.
//
// example: examples/headers/core.cc#or-throw
//   http::Response charge = OrThrow(payments->Send(std::move(request)));
template <typename T>
T OrThrow(Result<T>&& result) {
  if (!result) throw Exception(std::move(result).error());
  return std::move(*result);
}
inline void OrThrow(Result<void>&& result) {
  if (!result) throw Exception(std::move(result).error());
}

}  // namespace outbound

#endif  // OUTBOUND_ERROR_H_
