// SPDX-License-Identifier: Apache-2.0
// Origins and URLs, read as RFC 3986 says, by the client itself rather than
// by its transport, so the rules below hold whatever sends the request; the
// transport is only ever given a URL in the normal form made here. Internal.
//
// The same rules apply to the client's base URL, a request's URL and a
// redirect's Location:
//  - The scheme is http or https, in any case.
//  - The host is a name, a dotted-quad IPv4 address or a bracketed IPv6
//    address, compared in lower case (IPv6 in its RFC 5952 form).
//  - A name is ASCII letters, digits, '-' and '_' in dot-separated labels.
//    A name in any other script (an IDN) is refused: it is written in its
//    punycode form ("xn--..."), which then compares as any other name. Two
//    Unicode spellings can map to one punycode name, and matching them needs
//    the Unicode tables; refusing them leaves one spelling per host.
//  - A name with a trailing dot ("payments.") is another host than the name
//    without it: a resolver may try its search domains on "payments" and
//    not on "payments.", so the two can reach different machines.
//  - IPv4 in any other form ("127.1", "0x7f.0.0.1", "2130706433") is
//    refused: parsers disagree on what those mean.
//  - The port is 1 to 65535; none (or an empty one) is the scheme's
//    default, 80 or 443.
//  - The path and query are visible ASCII, '%' starting two hex digits, and
//    no '\' (which some parsers read as '/'). The fragment is dropped.
//  - User info is reported, for the caller to refuse: it is never sent.
#ifndef OUTBOUND_SRC_HTTP_ORIGIN_H_
#define OUTBOUND_SRC_HTTP_ORIGIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "outbound/error.h"

namespace outbound::http::internal {

struct Origin {
  std::string scheme;  // "http" or "https"
  std::string host;    // lower case; IPv6 without brackets
  std::uint16_t port = 0;

  // "https://payments:8443", the port always written.
  std::string ToString() const;
  // What a request names it by (HTTP/2's :authority, HTTP/1.1's Host):
  // "payments:8443", "[::1]:8443"; "payments" on the scheme's own port.
  std::string Authority() const;
  friend bool operator==(const Origin&, const Origin&) = default;
};

struct ParsedUrl {
  Origin origin;
  bool has_user_info = false;
  bool has_query = false;
  bool has_fragment = false;
  // The normal form: the origin as ToString writes it, then the path ("/"
  // when empty) and query; no user info, no fragment.
  std::string full;
};

// Parses an absolute http or https URL. kInvalidRequest for anything else,
// with a message that never quotes the user info.
[[nodiscard]] Result<ParsedUrl> ParseUrl(std::string_view url);

// The common case made cheap: `target` as an absolute URL on the origin
// written `origin_text` ("https://payments:8443"), if it is a plain path
// ("/charges/1?x=y": visible ASCII, no fragment or backslash) or that
// origin followed by one. Null for anything else, which ResolveTarget parses.
std::optional<std::string> JoinPlainPath(std::string_view origin_text, std::string_view target);
// The same in place: makes `target` that URL and returns true (a target
// that is already the whole URL, as most are, is kept with no copy), or
// returns false and leaves it as it is.
bool MakePlainUrl(std::string_view origin_text, std::string& target);

// A request's `target` as an absolute URL: a path ("/x") is joined onto
// `base`'s origin, a network-path reference ("//host/x") takes its scheme;
// an absolute URL is parsed as it is. Anything else is kInvalidRequest.
// `base_text` is `base.ToString()`, made once by the caller rather than on
// every call.
[[nodiscard]] Result<ParsedUrl> ResolveTarget(const Origin& base, std::string_view base_text,
                                              std::string_view target);

// A redirect's Location: `reference` resolved against the absolute URL
// `base` as RFC 3986 section 5.2 says (relative paths, "../", "?query",
// "//host" and absolute URLs), then parsed as ParseUrl does.
[[nodiscard]] Result<ParsedUrl> ResolveReference(std::string_view base, std::string_view reference);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_ORIGIN_H_
