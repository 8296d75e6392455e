// SPDX-License-Identifier: Apache-2.0
// outbound/http/middleware.h
//
// A user's own layers in a client's call path, at two levels: call
// middleware (Settings::call_middleware, in the order given, once per
// call) and attempt middleware (Settings::attempt_middleware, in the order
// given, once per attempt the breaker admitted). In the client's order:
//
//   call:    call middleware → bulkhead → rate limit → adaptive concurrency
//            → redirects → retry loop
//   attempt: attempt span → breaker → outlier detection → classify
//            → attempt middleware → attempt timeout → fault injection
//            → transport
//
// A call middleware sees the call once, before its retries and redirects
// (a cache, a call-level log, shaping the request). An attempt middleware
// sees every attempt the breaker admitted, retries and redirects included
// (signing, per-attempt headers, a wire log); what it answers or fails is
// the attempt's result, which the breaker counts and the retry loop decides
// on, as a real one.
//
// Each hook may change the request, or answer it (nothing below runs), and
// sees the outcome on the way back. A changed request passes the same checks
// as the caller's: a header with CR, LF or NUL, a connection header, Host,
// or a URL on another origin is refused (kInvalidRequest, kOriginRefused)
// and nothing is sent.
//
// example: examples/headers/http.cc#middleware
//   class Signer final : public http::AttemptMiddleware {
//     std::optional<Result<Response>> OnRequest(http::OutgoingRequest& r,
//                                               const http::AttemptInfo&) override {
//       r.SetHeader("X-Signature", Sign(r.method(), r.url(), r.body()));
//       return std::nullopt;
//     }
//   };
//   settings.attempt_middleware.push_back(std::make_shared<Signer>());
//
// Threads: hooks run on the caller's thread, the client's event-loop
// thread or the clock's timer thread, for many calls at once; they must be
// thread-safe and quick, and must not block. A hook that throws ends the
// call: the exception reaches the caller as a throwing classify's does.
#ifndef OUTBOUND_HTTP_MIDDLEWARE_H_
#define OUTBOUND_HTTP_MIDDLEWARE_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "outbound/clock.h"
#include "outbound/error.h"
#include "outbound/http/message.h"

namespace outbound::http {

namespace internal {
struct CallRequest;
}  // namespace internal

// The request a middleware sees: read it, or change it. Copied on the
// first change only, so reading costs nothing.
class OutgoingRequest {
 public:
  explicit OutgoingRequest(std::shared_ptr<const internal::CallRequest> request);
  ~OutgoingRequest();
  OutgoingRequest(const OutgoingRequest&) = delete;
  OutgoingRequest& operator=(const OutgoingRequest&) = delete;

  std::string_view method() const;
  // Absolute: the client's origin and the path.
  std::string_view url() const;
  const Headers& headers() const;
  // The first field named `name` (any case), or "".
  std::string_view header(std::string_view name) const;
  std::string_view body() const;

  // Replaces every field named `name` with one of `value`.
  void SetHeader(std::string name, std::string value);
  void RemoveHeader(std::string_view name);
  // An absolute URL or a path on the client's origin.
  void SetUrl(std::string url);

  bool changed() const { return changed_ != nullptr; }
  // The request as it is now. Internal.
  std::shared_ptr<const internal::CallRequest> request() const;

 private:
  internal::CallRequest& Mutable();
  std::shared_ptr<const internal::CallRequest> original_;
  std::shared_ptr<internal::CallRequest> changed_;
};

struct CallInfo {
  TimePoint deadline;  // the call's, on the Runtime's clock
};

struct AttemptInfo {
  int attempt = 1;       // within its request: 1 for the first
  int resend_count = 0;  // attempts of the call before this one
  TimePoint deadline;    // the call's
  // The client's origin, "https://payments:8443": every URL an attempt is
  // sent to starts with it.
  std::string_view origin;
  // This attempt repeats the one before because a middleware asked for it
  // (RepeatOnce): a credential provider is asked for a fresh credential.
  bool repeat = false;
};

// Sees each call once. Defaults do nothing.
class CallMiddleware {
 public:
  virtual ~CallMiddleware() = default;
  // Before the call goes down: may change `request`; an answer returned
  // ends the call with it, and nothing is sent.
  virtual std::optional<Result<Response>> OnRequest(OutgoingRequest& request,
                                                    const CallInfo& info) {
    (void)request;
    (void)info;
    return std::nullopt;
  }
  // How the call ended, if this middleware passed it down: may read or
  // replace `result`. `request` is the last one sent (after redirects).
  virtual void OnResult(const OutgoingRequest& request, Result<Response>& result,
                        const CallInfo& info) {
    (void)request;
    (void)result;
    (void)info;
  }
};

// Sees each attempt the breaker admitted. Defaults do nothing.
class AttemptMiddleware {
 public:
  virtual ~AttemptMiddleware() = default;
  // Before the attempt is sent: may change `request` (but not its origin);
  // an answer returned is the attempt's result, and nothing is sent.
  virtual std::optional<Result<Response>> OnRequest(OutgoingRequest& request,
                                                    const AttemptInfo& info) {
    (void)request;
    (void)info;
    return std::nullopt;
  }
  // How the attempt ended, if this middleware passed it down. `request` is
  // the request as sent.
  virtual void OnResult(const OutgoingRequest& request, Result<Response>& result,
                        const AttemptInfo& info) {
    (void)request;
    (void)result;
    (void)info;
  }
  // After OnResult, for an attempt this middleware passed down: whether the
  // request should be sent once more at once, outside the retry policy
  // (OkHttp's Authenticator: a 401 answered with a fresh credential). The
  // next attempt's AttemptInfo::repeat is then true. Honoured once per call,
  // for a body that can be sent again, never in a loop.
  virtual bool RepeatOnce(const Result<Response>& result, const AttemptInfo& info) {
    (void)result;
    (void)info;
    return false;
  }
};

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_MIDDLEWARE_H_
