// SPDX-License-Identifier: Apache-2.0
// Redirects: a 3xx with a Location on the client's origin is followed, up to
// 10, each as a request of its own with attempts of its own. One to another
// origin, or one whose Location holds user info, goes back to the caller as
// it came; the 11th within the origin fails the call as too many redirects.
#include <string>

#include "layers.h"

namespace outbound::http::internal {
namespace {

constexpr int kMaxRedirects = 10;

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

class Redirects final : public CallLayer {
 public:
  explicit Redirects(Origin origin)
      : origin_(std::move(origin)), origin_text_(origin_.ToString()) {}

  std::string_view name() const override { return "redirects"; }

  void Send(CallState& call) override { call.Proceed(*this); }

  bool Finish(CallState& call, CallOutcome& outcome) override {
    std::shared_ptr<CallRequest> next = NextRequest(call, outcome);
    if (!next) return true;
    if (call.redirects >= kMaxRedirects) {
      // A loop, or a chain too long to be one the dependency meant: the
      // last 3xx is not the answer, so it is not returned as one.
      outcome.result =
          Fail(ErrorKind::kTooManyRedirects,
               "more than " + std::to_string(kMaxRedirects) + " redirects within " + origin_text_);
      outcome.result.error().set_attempts(call.attempts.load());
      return true;
    }
    ++call.redirects;
    call.request = std::move(next);
    call.Proceed(*this);
    return false;
  }

 private:
  // The request a redirect asks for, if it is one to follow.
  std::shared_ptr<CallRequest> NextRequest(const CallState& call,
                                           const CallOutcome& outcome) const {
    if (outcome.thrown || !outcome.result || !IsRedirect(outcome.result->status)) return nullptr;
    std::string_view location = outcome.result->header("Location");
    while (!location.empty() && (location.front() == ' ' || location.front() == '\t')) {
      location.remove_prefix(1);
    }
    while (!location.empty() && (location.back() == ' ' || location.back() == '\t')) {
      location.remove_suffix(1);
    }
    if (location.empty()) return nullptr;
    const CallRequest& request = *call.request;
    auto target = ResolveReference(request.url, location);
    // Malformed, another origin, or credentials the server chose (which
    // would turn into an Authorization header): the caller's to handle.
    if (!target || target->has_user_info || !(target->origin == origin_)) return nullptr;
    auto next = std::make_shared<CallRequest>(request);
    next->url = std::move(target->full);
    int status = outcome.result->status;
    // As browsers and net/http do: 303, and 301/302 after a POST, become a
    // GET without a body; 307 and 308 repeat the request as it was.
    if (status == 303 || ((status == 301 || status == 302) && request.method == "POST")) {
      next->method = request.method == "HEAD" ? "HEAD" : "GET";
      next->body.clear();
      next->body_source = {};
      std::erase_if(next->headers, [](const auto& h) {
        return SameHeaderName(h.first, "Content-Type") || SameHeaderName(h.first, "Content-Length");
      });
    }
    // A body read once is gone: the redirect is the caller's to handle.
    if (next->body_source && !next->replayable) return nullptr;
    return next;
  }

  Origin origin_;
  std::string origin_text_;
};

}  // namespace

std::unique_ptr<CallLayer> MakeRedirects(const Origin& origin) {
  return std::make_unique<Redirects>(origin);
}

}  // namespace outbound::http::internal
