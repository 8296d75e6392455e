// The checks every request passes before anything is dialled.
#include "request_check.h"

#include <array>

namespace outbound::http::internal {
namespace {

// RFC 9110 tchar: visible ASCII but the separators. A table: every call's
// method and header names go through it.
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> table{};
  constexpr std::string_view kSeparators = "()<>@,;:\\\"/[]?={}";
  for (int c = 33; c < 127; ++c)
    table[c] = kSeparators.find(static_cast<char>(c)) == kSeparators.npos;
  return table;
}();

bool IsToken(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

}  // namespace

// The origin check: the request names the client's origin (or a path on
// it) and carries nothing that would change its meaning on the wire.
Result<CallRequest> CheckRequest(const Origin& origin, std::string_view origin_text,
                                 Request& request) {
  if (!IsToken(request.method)) {
    return Fail(ErrorKind::kInvalidRequest, "\"" + request.method + "\" is not an HTTP method");
  }
  for (const auto& [name, value] : request.headers) {
    if (!IsToken(name)) {
      return Fail(ErrorKind::kInvalidRequest, "header name \"" + name + "\" is not a token");
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return Fail(ErrorKind::kInvalidRequest,
                  "the value of header " + name + " holds a CR, LF or NUL");
    }
  }
  std::optional<std::string> full = JoinPlainPath(origin_text, request.url);
  if (!full) {
    auto url = ResolveTarget(origin, origin_text, request.url);
    if (!url) return tl::unexpected(url.error());
    if (!(url->origin == origin)) {
      return Fail(ErrorKind::kOriginRefused, "outbound: request to " + url->origin.ToString() +
                                                 " on a client for " + std::string(origin_text));
    }
    if (url->has_user_info) {
      return Fail(ErrorKind::kInvalidRequest, "a request URL must not hold user info");
    }
    full = std::move(url->full);
  }
  return CallRequest{std::move(request.method), std::move(*full), std::move(request.headers),
                     std::move(request.body), request.body_replayable};
}

}  // namespace outbound::http::internal
