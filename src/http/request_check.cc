// SPDX-License-Identifier: Apache-2.0
// The checks every request passes before anything is dialled.
#include "request_check.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace outbound::http::internal {
namespace {

// RFC 9110 tchar: visible ASCII but the separators. A table: every call's
// method and header names go through it.
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> table{};
  constexpr std::string_view kSeparators = "()<>@,;:\\\"/[]?={}";
  for (int c = 33; c < 127; ++c) {
    table[c] = kSeparators.find(static_cast<char>(c)) == kSeparators.npos;
  }
  return table;
}();

// RFC 9110 5.5 field-content: visible ASCII, SP, HTAB and obs-text (0x80 to
// 0xFF, which the RFC keeps for old values and receivers treat as opaque).
// Every other control character is refused: CR, LF and NUL would split or
// end the field, and the rest are sent raw on HTTP/1.1 but dropped with
// their field on HTTP/2, so a value means one thing on both or is refused.
constexpr std::array<bool, 256> kValueChars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) table[c] = c == '\t' || (c >= 0x20 && c != 0x7f);
  return table;
}();

bool IsToken(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

bool StartsWithName(std::string_view name, std::string_view prefix) {
  return name.size() >= prefix.size() && SameHeaderName(name.substr(0, prefix.size()), prefix);
}

// Why the caller must not set header `name`, or null if it may. These are
// the fields the client writes itself from the origin, method and body, or
// that manage the connection, which is the client's: set by hand they could
// address another virtual host, frame the body twice (request smuggling),
// or change the connection under other calls. HTTP/2 forbids the
// connection-specific ones outright (RFC 9113 8.2.2), all but `TE:
// trailers`, which says the client reads trailer fields (gRPC requires it).
const char* ReservedBecause(std::string_view name, std::string_view value) {
  if (!name.empty() && name.front() == ':') {
    return "it is an HTTP/2 pseudo-header, which the client writes from the method and URL";
  }
  if (SameHeaderName(name, "Host")) return "the client writes it from its origin";
  if (SameHeaderName(name, "Content-Length")) return "the client writes it from the body";
  if (SameHeaderName(name, "Transfer-Encoding")) return "the client frames the body itself";
  if (SameHeaderName(name, "TE")) {
    std::size_t first = value.find_first_not_of(" \t");
    std::size_t last = value.find_last_not_of(" \t");
    if (first != std::string_view::npos &&
        SameHeaderName(value.substr(first, last - first + 1), "trailers")) {
      return nullptr;
    }
  }
  if (SameHeaderName(name, "Connection") || SameHeaderName(name, "Keep-Alive") ||
      SameHeaderName(name, "Upgrade") || SameHeaderName(name, "TE") ||
      SameHeaderName(name, "HTTP2-Settings")) {
    return "it manages the connection, which is the client's";
  }
  if (StartsWithName(name, "Proxy-")) return "it is meant for a proxy, and the client uses none";
  return nullptr;
}

// Leading and trailing SP and HTAB are not part of a field value (RFC 9110
// 5.5): an HTTP/1.1 server strips them and HTTP/2 forbids them. Trimming
// them sends what the server would have read, on both protocols; a value
// of whitespace alone is sent empty.
void TrimWhitespace(std::string& value) {
  std::size_t end = value.find_last_not_of(" \t");
  if (end == std::string::npos) return value.clear();
  value.erase(end + 1);
  value.erase(0, value.find_first_not_of(" \t"));
}

std::string Hex(unsigned char c) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", c);
  return text;
}

Result<void> CheckHeader(std::string_view name, std::string& value) {
  if (const char* why = ReservedBecause(name, value)) {
    return Fail(ErrorKind::kInvalidRequest,
                "header \"" + std::string(name) + "\" cannot be set by hand: " + why);
  }
  if (SameHeaderName(name, "TE")) value = "trailers";  // as HTTP/2 spells it
  if (!IsToken(name)) {
    return Fail(ErrorKind::kInvalidRequest,
                "header name \"" + std::string(name) + "\" is not a token");
  }
  for (char c : value) {
    if (!kValueChars[static_cast<unsigned char>(c)]) {
      return Fail(ErrorKind::kInvalidRequest, "the value of header \"" + std::string(name) +
                                                  "\" holds the control character " +
                                                  Hex(static_cast<unsigned char>(c)));
    }
  }
  if (!value.empty() && (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' ||
                         value.back() == '\t')) {
    TrimWhitespace(value);
  }
  return {};
}

}  // namespace

bool IsFieldValue(std::string_view value) {
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return kValueChars[static_cast<unsigned char>(c)]; });
}

// The origin check: the request names the client's origin (or a path on
// it) and carries nothing that would change its meaning on the wire.
Result<CheckedRequest> CheckRequest(const Origin& origin, std::string_view origin_text,
                                    Request& request, bool ask_gzip) {
  if (!IsToken(request.method)) {
    return Fail(ErrorKind::kInvalidRequest, "\"" + request.method + "\" is not an HTTP method");
  }
  if (request.body_source && !request.body.empty()) {
    return Fail(ErrorKind::kInvalidRequest,
                "a request has both a body and a body source (StreamBodyFrom); set one");
  }
  if (request.receive_window && !request.body_sink) {
    return Fail(ErrorKind::kInvalidRequest,
                "a ReceiveWindow paces a streamed body: give it with StreamBodyTo(sink, window)");
  }
  if (request.body_timeout && !request.body_sink) {
    return Fail(ErrorKind::kInvalidRequest,
                "a body timeout (WithBodyTimeout) bounds a streamed body: set StreamBodyTo too");
  }
  if (request.body_head && !request.body_sink) {
    return Fail(ErrorKind::kInvalidRequest,
                "OnBodyHead hears the head of a streamed body: set StreamBodyTo too");
  }
  if (request.body_timeout && *request.body_timeout <= Duration::zero()) {
    return Fail(ErrorKind::kInvalidRequest, "a body timeout must be positive");
  }
  bool has_user_agent = false;
  bool has_accept_encoding = false;
  for (auto& [name, value] : request.headers) {
    if (auto checked = CheckHeader(name, value); !checked) return tl::unexpected(checked.error());
    has_user_agent = has_user_agent || SameHeaderName(name, "User-Agent");
    has_accept_encoding = has_accept_encoding || SameHeaderName(name, "Accept-Encoding");
  }
  bool decode_gzip = ask_gzip && !has_accept_encoding;
  if (decode_gzip) request.headers.emplace_back("Accept-Encoding", "gzip");
  if (!MakePlainUrl(origin_text, request.url)) {
    auto url = ResolveTarget(origin, origin_text, request.url);
    if (!url) return tl::unexpected(url.error());
    if (url->has_user_info) {
      return Fail(ErrorKind::kInvalidRequest, "a request URL must not hold user info");
    }
    if (!(url->origin == origin)) {
      return Fail(ErrorKind::kOriginRefused, "a request to " + url->origin.ToString() +
                                                 " on a client for " + std::string(origin_text));
    }
    request.url = std::move(url->full);
  }
  // A server's logs should say who called: the library names itself unless
  // the caller names its own program.
  return CheckedRequest{.decode_gzip = decode_gzip, .default_user_agent = !has_user_agent};
}

CallRequest TakeCallRequest(Request& request, CheckedRequest checked) {
  return CallRequest{
      std::move(request.method),      std::move(request.url),  std::move(request.headers),
      std::move(request.body),        request.body_replayable, std::nullopt,
      std::move(request.body_source), checked.decode_gzip,     checked.default_user_agent};
}

}  // namespace outbound::http::internal
