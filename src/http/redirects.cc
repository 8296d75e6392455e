// Redirects: a 3xx with a Location on the client's origin is followed, up to
// 10, each as a request of its own with attempts of its own. One to another
// origin goes back to the caller as it came.
#include <curl/curl.h>

#include "layers.h"

namespace outbound::http::internal {
namespace {

constexpr int kMaxRedirects = 10;

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// `location` resolved against `base` (it may be relative).
std::optional<std::string> Resolve(const std::string& base, std::string_view location) {
  CURLU* url = curl_url();
  std::optional<std::string> resolved;
  std::string loc(location);
  if (curl_url_set(url, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
      curl_url_set(url, CURLUPART_URL, loc.c_str(), 0) == CURLUE_OK) {
    char* full = nullptr;
    if (curl_url_get(url, CURLUPART_URL, &full, 0) == CURLUE_OK) resolved = full;
    curl_free(full);
  }
  curl_url_cleanup(url);
  return resolved;
}

class Redirects final : public CallLayer {
 public:
  Redirects(std::unique_ptr<CallLayer> next, Origin origin)
      : next_(std::move(next)), origin_(std::move(origin)) {}

  void Send(const std::shared_ptr<CallState>& call) override {
    call->Enter(*this);
    next_->Send(call);
  }

  bool Finish(CallState& call, CallOutcome& outcome) override {
    std::shared_ptr<CallRequest> next = NextRequest(call, outcome);
    if (!next) return true;
    ++call.redirects;
    call.request = std::move(next);
    Send(call.shared_from_this());
    return false;
  }

 private:
  // The request a redirect asks for, if it is one to follow.
  std::shared_ptr<CallRequest> NextRequest(const CallState& call,
                                           const CallOutcome& outcome) const {
    if (outcome.thrown || !outcome.result || !IsRedirect(outcome.result->status)) return nullptr;
    if (call.redirects >= kMaxRedirects) return nullptr;
    std::string_view location = outcome.result->header("Location");
    if (location.empty()) return nullptr;
    const CallRequest& request = *call.request;
    std::optional<std::string> target = Resolve(request.url, location);
    if (!target) return nullptr;
    auto parsed = ParseUrl(*target);
    if (!parsed || !(parsed->origin == origin_)) return nullptr;  // another origin: the caller's
    auto next = std::make_shared<CallRequest>(request);
    next->url = parsed->full;
    int status = outcome.result->status;
    // As browsers and net/http do: 303, and 301/302 after a POST, become a
    // GET without a body; 307 and 308 repeat the request as it was.
    if (status == 303 || ((status == 301 || status == 302) && request.method == "POST")) {
      next->method = request.method == "HEAD" ? "HEAD" : "GET";
      next->body.clear();
      std::erase_if(next->headers, [](const auto& h) {
        return SameHeaderName(h.first, "Content-Type") || SameHeaderName(h.first, "Content-Length");
      });
    }
    return next;
  }

  std::unique_ptr<CallLayer> next_;
  Origin origin_;
};

}  // namespace

std::unique_ptr<CallLayer> MakeRedirects(std::unique_ptr<CallLayer> next, const Origin& origin) {
  return std::make_unique<Redirects>(std::move(next), origin);
}

}  // namespace outbound::http::internal
