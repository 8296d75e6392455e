// SPDX-License-Identifier: Apache-2.0
// Credentials pinned to the client's origin, as attempt middleware.
#include "outbound/http/auth.h"

#include <array>

namespace outbound::http {
namespace {

// RFC 4648 base64, padded.
std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    auto b = [&](std::size_t k) { return static_cast<unsigned char>(in[i + k]); };
    unsigned n = (b(0) << 16) | (b(1) << 8) | b(2);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(n >> shift) & 63]);
  }
  std::size_t rest = in.size() - i;
  if (rest > 0) {
    unsigned n = static_cast<unsigned char>(in[i]) << 16;
    if (rest == 2) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

// Whether `url` is on `origin` ("https://payments:8443"): the origin, then
// the path or nothing. Both are in the client's canonical form.
bool OnOrigin(std::string_view url, std::string_view origin) {
  return !origin.empty() && url.starts_with(origin) &&
         (url.size() == origin.size() || url[origin.size()] == '/' || url[origin.size()] == '?');
}

class Authorization final : public AttemptMiddleware {
 public:
  Authorization(std::string scheme, CredentialProvider provider, bool refreshable)
      : scheme_(std::move(scheme)), provider_(std::move(provider)), refreshable_(refreshable) {}

  std::optional<Result<Response>> OnRequest(OutgoingRequest& request,
                                            const AttemptInfo& info) override {
    if (!OnOrigin(request.url(), info.origin)) {
      request.RemoveHeader("Authorization");
      return std::nullopt;
    }
    std::string credential = provider_(info.repeat);
    if (credential.empty()) return std::nullopt;
    request.SetHeader("Authorization", scheme_ + " " + credential);
    return std::nullopt;
  }

  bool RepeatOnce(const Result<Response>& result, const AttemptInfo& info) override {
    return refreshable_ && result && result->status == 401 &&
           !result->header("WWW-Authenticate").empty() && !info.origin.empty();
  }

 private:
  std::string scheme_;
  CredentialProvider provider_;
  bool refreshable_;
};

}  // namespace

std::shared_ptr<AttemptMiddleware> WithBearerToken(CredentialProvider token) {
  return std::make_shared<Authorization>("Bearer", std::move(token), true);
}

std::shared_ptr<AttemptMiddleware> WithBearerToken(std::string token) {
  return std::make_shared<Authorization>(
      "Bearer", [token = std::move(token)](bool) { return token; }, false);
}

std::shared_ptr<AttemptMiddleware> WithBasicAuth(const std::string& user,
                                                 const std::string& password) {
  return std::make_shared<Authorization>(
      "Basic", [encoded = Base64(user + ":" + password)](bool) { return encoded; }, false);
}

}  // namespace outbound::http
