// An origin (scheme, host, port) and URL checks, parsed by libcurl's URL
// API so the client and curl agree on what a URL means. Internal.
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
  std::string host;    // as in the URL; IPv6 without brackets
  std::uint16_t port = 0;

  // "https://payments:8443", the port always written.
  std::string ToString() const;
  friend bool operator==(const Origin&, const Origin&) = default;
};

struct ParsedUrl {
  Origin origin;
  bool has_user_info = false;
  bool has_query = false;
  bool has_fragment = false;
  std::string full;  // normalized, without a fragment
};

// Parses an absolute http or https URL. kInvalidRequest for anything else.
[[nodiscard]] Result<ParsedUrl> ParseUrl(const std::string& url);

// The common case made cheap: `target` as an absolute URL on the origin
// written `origin_text` ("https://payments:8443"), if it is a plain path
// ("/charges/1?x=y": printable ASCII, no fragment or backslash) or that
// origin followed by one. Null for anything else, which ResolveTarget parses.
std::optional<std::string> JoinPlainPath(std::string_view origin_text, std::string_view target);

// `target` as an absolute URL: a path ("/x") is joined onto `base`'s origin;
// an absolute URL is parsed as it is. `base_text` is `base.ToString()`,
// made once by the caller rather than on every call.
[[nodiscard]] Result<ParsedUrl> ResolveTarget(const Origin& base, std::string_view base_text,
                                              const std::string& target);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_ORIGIN_H_
