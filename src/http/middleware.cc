// SPDX-License-Identifier: Apache-2.0
// The user's middleware as two layers of the call path: one call layer that
// runs every call middleware in order, above the redirects, and one attempt
// layer that runs every attempt middleware, below the breaker. One layer per
// level, whatever the number of middleware, so a client's depth is fixed.
#include "outbound/http/middleware.h"

#include "layers.h"
#include "request_check.h"

namespace outbound::http {

OutgoingRequest::OutgoingRequest(std::shared_ptr<const internal::CallRequest> request)
    : original_(std::move(request)) {}
OutgoingRequest::~OutgoingRequest() = default;

std::string_view OutgoingRequest::method() const { return request()->method; }
std::string_view OutgoingRequest::url() const { return request()->url; }
const Headers& OutgoingRequest::headers() const { return request()->headers; }
std::string_view OutgoingRequest::header(std::string_view name) const {
  return FindHeader(headers(), name);
}
std::string_view OutgoingRequest::body() const { return request()->body; }

std::shared_ptr<const internal::CallRequest> OutgoingRequest::request() const {
  if (changed_) return changed_;
  return original_;
}

internal::CallRequest& OutgoingRequest::Mutable() {
  if (!changed_) changed_ = std::make_shared<internal::CallRequest>(*original_);
  return *changed_;
}

void OutgoingRequest::SetHeader(std::string name, std::string value) {
  RemoveHeader(name);
  Mutable().headers.emplace_back(std::move(name), std::move(value));
}

void OutgoingRequest::RemoveHeader(std::string_view name) {
  bool present = false;
  for (const auto& field : headers()) present = present || SameHeaderName(field.first, name);
  if (!present) return;  // nothing to copy
  std::erase_if(Mutable().headers,
                [name](const auto& field) { return SameHeaderName(field.first, name); });
}

void OutgoingRequest::SetUrl(std::string url) { Mutable().url = std::move(url); }

namespace internal {
namespace {

// A request a middleware changed, checked as the caller's was.
Result<std::shared_ptr<const CallRequest>> Recheck(const Origin& origin,
                                                   const std::string& origin_text,
                                                   const OutgoingRequest& changed) {
  const CallRequest& c = *changed.request();
  Request request;
  request.method = c.method;
  request.url = c.url;
  request.headers = c.headers;
  request.body = c.body;
  request.body_replayable = c.replayable;
  request.body_source = c.body_source;
  auto checked = CheckRequest(origin, origin_text, request);
  if (!checked) {
    Error error(checked.error().kind(), "a middleware's request: " + checked.error().message());
    return tl::unexpected(std::move(error));
  }
  auto made = std::make_shared<CallRequest>(TakeCallRequest(request, *checked));
  // A gRPC method declared idempotent (or not) stays so.
  made->idempotent = c.idempotent;
  // Still a request whose gzip answer is decoded, if the original was and
  // the middleware left its Accept-Encoding as the client set it.
  made->decode_gzip = c.decode_gzip && FindHeader(made->headers, "Accept-Encoding") == "gzip";
  return made;
}

class CallMiddlewareLayer final : public CallLayer {
 public:
  CallMiddlewareLayer(const Origin& origin, std::vector<std::shared_ptr<CallMiddleware>> middleware)
      : origin_(origin), origin_text_(origin.ToString()), middleware_(std::move(middleware)) {}

  std::string_view name() const override { return "call middleware"; }

  void Send(CallState& call) override {
    CallInfo info{call.deadline()};
    OutgoingRequest request(call.request);
    for (std::size_t i = 0; i < middleware_.size(); ++i) {
      CallOutcome outcome;
      try {
        auto answer = middleware_[i]->OnRequest(request, info);
        if (!answer) continue;
        outcome.result = std::move(*answer);
      } catch (...) {
        outcome.thrown = std::current_exception();
      }
      return End(call, i, request, info, std::move(outcome));
    }
    if (request.changed()) {
      auto checked = Recheck(origin_, origin_text_, request);
      if (!checked) {
        CallOutcome outcome;
        outcome.result = tl::unexpected(checked.error());
        return End(call, middleware_.size(), request, info, std::move(outcome));
      }
      call.request = std::move(*checked);
    }
    call.Proceed(*this);
  }

  bool Finish(CallState& call, CallOutcome& outcome) override {
    OutgoingRequest request(call.request);
    AfterAll(middleware_.size(), request, {call.deadline()}, outcome);
    return true;
  }

 private:
  // The middleware before `passed` hear the outcome, the last first.
  void AfterAll(std::size_t passed, const OutgoingRequest& request, const CallInfo& info,
                CallOutcome& outcome) {
    while (passed > 0) {
      try {
        middleware_[--passed]->OnResult(request, outcome.result, info);
      } catch (...) {
        if (!outcome.thrown) outcome.thrown = std::current_exception();
      }
    }
  }

  void End(CallState& call, std::size_t passed, const OutgoingRequest& request,
           const CallInfo& info, CallOutcome&& outcome) {
    AfterAll(passed, request, info, outcome);
    call.End(std::move(outcome));
  }

  Origin origin_;
  std::string origin_text_;
  std::vector<std::shared_ptr<CallMiddleware>> middleware_;
};

class AttemptMiddlewareLayer final : public AttemptLayer {
 public:
  AttemptMiddlewareLayer(const Origin& origin,
                         std::vector<std::shared_ptr<AttemptMiddleware>> middleware)
      : origin_(origin), origin_text_(origin.ToString()), middleware_(std::move(middleware)) {}

  std::string_view name() const override { return "attempt middleware"; }

  void Start(Attempt& attempt) override {
    AttemptInfo info = Info(attempt);
    OutgoingRequest request(attempt.request);
    for (std::size_t i = 0; i < middleware_.size(); ++i) {
      AttemptOutcome outcome;
      try {
        auto answer = middleware_[i]->OnRequest(request, info);
        if (!answer) continue;
        outcome.result = std::move(*answer);
        outcome.answered_by_middleware = true;
      } catch (...) {
        outcome.thrown = std::current_exception();
        outcome.result = Fail(ErrorKind::kTransport, "an attempt middleware threw");
      }
      return End(attempt, i, request, info, std::move(outcome));
    }
    if (request.changed()) {
      auto checked = Recheck(origin_, origin_text_, request);
      if (!checked) {
        AttemptOutcome outcome;
        outcome.result = tl::unexpected(checked.error());
        outcome.cannot_improve = true;
        return End(attempt, middleware_.size(), request, info, std::move(outcome));
      }
      attempt.request = std::move(*checked);
    }
    attempt.Proceed(*this);
  }

  void Finish(Attempt& attempt, AttemptOutcome& outcome) override {
    OutgoingRequest request(attempt.request);
    AttemptInfo info = Info(attempt);
    AfterAll(middleware_.size(), request, info, outcome);
    if (outcome.thrown) return;
    for (const auto& middleware : middleware_) {
      try {
        outcome.repeat_once = outcome.repeat_once || middleware->RepeatOnce(outcome.result, info);
      } catch (...) {
        outcome.thrown = std::current_exception();
        return;
      }
    }
  }

 private:
  AttemptInfo Info(const Attempt& attempt) const {
    return {attempt.number, attempt.resend_count, attempt.call->deadline(), origin_text_,
            attempt.repeat};
  }

  void AfterAll(std::size_t passed, const OutgoingRequest& request, const AttemptInfo& info,
                AttemptOutcome& outcome) {
    while (passed > 0) {
      try {
        middleware_[--passed]->OnResult(request, outcome.result, info);
      } catch (...) {
        if (!outcome.thrown) outcome.thrown = std::current_exception();
      }
    }
  }

  void End(Attempt& attempt, std::size_t passed, const OutgoingRequest& request,
           const AttemptInfo& info, AttemptOutcome&& outcome) {
    AfterAll(passed, request, info, outcome);
    attempt.End(std::move(outcome));
  }

  Origin origin_;
  std::string origin_text_;
  std::vector<std::shared_ptr<AttemptMiddleware>> middleware_;
};

}  // namespace

std::unique_ptr<CallLayer> MakeCallMiddleware(
    const Origin& origin, std::vector<std::shared_ptr<CallMiddleware>> middleware) {
  return std::make_unique<CallMiddlewareLayer>(origin, std::move(middleware));
}

std::unique_ptr<AttemptLayer> MakeAttemptMiddleware(
    const Origin& origin, std::vector<std::shared_ptr<AttemptMiddleware>> middleware) {
  return std::make_unique<AttemptMiddlewareLayer>(origin, std::move(middleware));
}

}  // namespace internal
}  // namespace outbound::http
