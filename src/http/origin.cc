// SPDX-License-Identifier: Apache-2.0
#include "origin.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "outbound/internal/ascii.h"

namespace outbound::http::internal {
namespace {

using outbound::internal::AsciiLower;
using outbound::internal::IsAsciiAlpha;
using outbound::internal::IsAsciiDigit;

bool IsHex(char c) { return IsAsciiDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// What a path or query may hold as it is: visible ASCII but '#' (a
// fragment), '\' (which some parsers read as '/') and '%' (which starts an
// escape). The characters RFC 3986 leaves out but servers take as they are
// ('"', '<', '>', '^', '`', '{', '|', '}') pass, as curl and browsers pass them.
constexpr std::array<bool, 256> kTargetChars = [] {
  std::array<bool, 256> table{};
  for (int c = 33; c < 127; ++c) table[c] = c != '#' && c != '\\' && c != '%';
  return table;
}();

// Whether `target` is a path and query the client may send as it is:
// kTargetChars, and each '%' followed by two hex digits.
bool PlainTarget(std::string_view target) {
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (kTargetChars[static_cast<unsigned char>(target[i])]) continue;
    if (target[i] != '%' || target.size() - i < 3 || !IsHex(target[i + 1]) ||
        !IsHex(target[i + 2])) {
      return false;
    }
    i += 2;
  }
  return true;
}

// A URI reference split as RFC 3986 appendix B does, before any check.
struct Parts {
  std::optional<std::string_view> scheme;
  std::optional<std::string_view> authority;
  std::string_view path;
  std::optional<std::string_view> query;
  std::optional<std::string_view> fragment;
};

Parts Split(std::string_view text) {
  Parts parts;
  if (std::size_t hash = text.find('#'); hash != text.npos) {
    parts.fragment = text.substr(hash + 1);
    text = text.substr(0, hash);
  }
  if (std::size_t q = text.find('?'); q != text.npos) {
    parts.query = text.substr(q + 1);
    text = text.substr(0, q);
  }
  if (std::size_t colon = text.find(':');
      colon != text.npos && colon > 0 && text.substr(0, colon).find('/') == text.npos) {
    parts.scheme = text.substr(0, colon);
    text.remove_prefix(colon + 1);
  }
  if (text.substr(0, 2) == "//") {
    text.remove_prefix(2);
    std::size_t slash = text.find('/');
    parts.authority = text.substr(0, slash);
    text = slash == text.npos ? std::string_view() : text.substr(slash);
  }
  parts.path = text;
  return parts;
}

// RFC 3986 5.2.4.
std::string RemoveDotSegments(std::string_view in) {
  std::vector<std::string_view> out;
  bool absolute = !in.empty() && in.front() == '/';
  if (absolute) in.remove_prefix(1);
  bool trailing_slash = false;
  while (true) {
    std::size_t slash = in.find('/');
    std::string_view segment = in.substr(0, slash);
    bool last = slash == in.npos;
    if (segment == ".") {
      trailing_slash = last;
    } else if (segment == "..") {
      if (!out.empty()) out.pop_back();
      trailing_slash = last;
    } else {
      out.push_back(segment);
      trailing_slash = false;
    }
    if (last) break;
    in.remove_prefix(slash + 1);
  }
  std::string result = absolute ? "/" : "";
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i > 0) result += '/';
    result += out[i];
  }
  if (trailing_slash && !out.empty() && !out.back().empty()) result += '/';
  return result;
}

Result<void> Invalid(std::string message) {
  return Fail(ErrorKind::kInvalidRequest, std::move(message));
}

// A dotted-quad IPv4 address in its one normal form: four decimal numbers
// of 0 to 255 without leading zeros.
bool CanonicalIpv4(std::string_view host) {
  int parts = 0;
  while (true) {
    std::size_t dot = host.find('.');
    std::string_view part = host.substr(0, dot);
    if (part.empty() || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return false;
    int value = 0;
    for (char c : part) {
      if (!IsAsciiDigit(c)) return false;
      value = value * 10 + (c - '0');
    }
    if (value > 255) return false;
    ++parts;
    if (dot == host.npos) break;
    host.remove_prefix(dot + 1);
  }
  return parts == 4;
}

// A registered name or IPv4 address, lower-cased into `out`.
Result<void> ParseName(std::string_view host, std::string& out) {
  if (host.empty()) return Invalid("the URL has no host");
  if (host.size() > 254) return Invalid("the URL's host is longer than 253 characters");
  out.clear();
  out.reserve(host.size());
  for (char c : host) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      return Invalid(
          "the URL's host is not ASCII: write an internationalized name in its punycode form "
          "(xn--...)");
    }
    if (!IsAsciiAlpha(c) && !IsAsciiDigit(c) && c != '-' && c != '_' && c != '.') {
      return Invalid("the URL's host holds '" + std::string(1, c) +
                     "': a host is letters, digits, '-', '_' and '.'");
    }
    out += AsciiLower(c);
  }
  // Labels: none empty, but for the one after a trailing dot.
  std::string_view name = out;
  if (name.back() == '.') name.remove_suffix(1);
  std::string_view last;
  for (std::string_view rest = name;;) {
    std::size_t dot = rest.find('.');
    last = rest.substr(0, dot);
    if (last.empty()) return Invalid("the URL's host \"" + out + "\" has an empty label");
    if (last.size() > 63) return Invalid("the URL's host has a label over 63 characters");
    if (dot == rest.npos) break;
    rest.remove_prefix(dot + 1);
  }
  // A name whose last label is a number is an IPv4 address to every URL
  // parser; only its dotted-quad form means the same to all of them.
  bool numeric = last.substr(0, 2) == "0x";
  if (!numeric) {
    numeric = true;
    for (char c : last) numeric = numeric && IsAsciiDigit(c);
  }
  if (numeric && !CanonicalIpv4(out)) {
    return Invalid("the URL's host \"" + out + "\" is not a dotted-quad IPv4 address");
  }
  return {};
}

// An IPv6 literal (between the brackets), in its RFC 5952 form into `out`.
Result<void> ParseIpv6(std::string_view literal, std::string& out) {
  // No zone ("%25eth0") and no IPvFuture ("v1.x"): neither names a
  // dependency's address.
  if (literal.empty() || literal.size() > 45) return Invalid("the URL's IPv6 address is malformed");
  for (char c : literal) {
    if (!IsHex(c) && c != ':' && c != '.') return Invalid("the URL's IPv6 address is malformed");
  }
  std::string text(literal);
  in6_addr address{};
  if (inet_pton(AF_INET6, text.c_str(), &address) != 1) {
    return Invalid("the URL's IPv6 address is malformed");
  }
  char normal[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, &address, normal, sizeof normal);
  out = normal;
  return {};
}

// The authority's host and port into `url`, user info noted.
Result<void> ParseAuthority(std::string_view authority, ParsedUrl& url) {
  // User info is never sent, and a URL holding it is refused by every
  // caller, so where it ends matters only to find the host: after the
  // last '@', as WHATWG and curl read it.
  if (std::size_t at = authority.rfind('@'); at != authority.npos) {
    url.has_user_info = true;
    authority.remove_prefix(at + 1);
  }
  std::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find(']');
    if (close == authority.npos) return Invalid("the URL's IPv6 address has no ']'");
    if (auto ok = ParseIpv6(authority.substr(1, close - 1), url.origin.host); !ok) return ok;
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return Invalid("the URL has text after its IPv6 address");
      has_port = true;
      port = rest.substr(1);
    }
  } else {
    std::size_t colon = authority.find(':');
    if (colon != authority.npos) {
      has_port = true;
      port = authority.substr(colon + 1);
    }
    if (auto ok = ParseName(authority.substr(0, colon), url.origin.host); !ok) return ok;
  }
  std::uint32_t number = url.origin.scheme == "https" ? 443 : 80;
  if (has_port && !port.empty()) {
    number = 0;
    for (char c : port) {
      if (!IsAsciiDigit(c)) return Invalid("the URL's port is not a number");
      number = std::min<std::uint32_t>(number * 10 + static_cast<std::uint32_t>(c - '0'), 65536);
    }
    if (number == 0 || number > 65535) {
      return Invalid("the URL's port is not from 1 to 65535");
    }
  }
  url.origin.port = static_cast<std::uint16_t>(number);
  return {};
}

// An absolute URL from its parts: every check but the characters of the
// whole, which the callers make first.
Result<ParsedUrl> FromParts(const Parts& parts) {
  if (!parts.scheme) return Fail(ErrorKind::kInvalidRequest, "the URL is not absolute");
  ParsedUrl url;
  for (char c : *parts.scheme) url.origin.scheme += AsciiLower(c);
  if (url.origin.scheme != "http" && url.origin.scheme != "https") {
    return Fail(ErrorKind::kInvalidRequest, "the URL is not an http or https URL");
  }
  if (!parts.authority) return Fail(ErrorKind::kInvalidRequest, "the URL has no host");
  if (auto ok = ParseAuthority(*parts.authority, url); !ok) return tl::unexpected(ok.error());
  std::string_view path = parts.path.empty() ? "/" : parts.path;
  if (!PlainTarget(path) || (parts.query && !PlainTarget(*parts.query))) {
    return Fail(ErrorKind::kInvalidRequest,
                "the URL's path or query holds a character that must be percent-encoded");
  }
  url.has_query = parts.query.has_value();
  url.has_fragment = parts.fragment.has_value();
  url.full = url.origin.ToString();
  url.full.append(path);
  if (parts.query) url.full.append("?").append(*parts.query);
  return url;
}

// Whether `text` is made of bytes a URL may hold at all: visible ASCII
// (non-ASCII hosts are told apart later, for a message that says so).
Result<void> CheckBytes(std::string_view text) {
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return Invalid("a URL must not hold spaces or control characters");
    }
    if (c == '\\') return Invalid("a URL must not hold '\\'");
  }
  return {};
}

}  // namespace

std::string Origin::ToString() const {
  bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Origin::Authority() const {
  bool v6 = host.find(':') != std::string::npos;
  std::string authority = v6 ? "[" + host + "]" : host;
  if (port != (scheme == "https" ? 443 : 80)) authority.append(":").append(std::to_string(port));
  return authority;
}

Result<ParsedUrl> ParseUrl(std::string_view text) {
  if (auto ok = CheckBytes(text); !ok) return tl::unexpected(ok.error());
  return FromParts(Split(text));
}

namespace {

// What of `target` is a plain path on `origin` ("/x?y"), and whether the
// origin came before it (`whole`); nullopt if it is neither such a path
// nor the origin followed by one.
std::optional<std::string_view> PlainPathOn(std::string_view origin, std::string_view target,
                                            bool& whole) {
  std::string_view path = target;
  whole = path.substr(0, origin.size()) == origin;
  if (whole) path.remove_prefix(origin.size());
  if (path.size() < 2 || path[0] != '/' || path[1] == '/') return std::nullopt;
  if (!PlainTarget(path)) return std::nullopt;
  return path;
}

std::string Joined(std::string_view origin, std::string_view path) {
  std::string full;
  full.reserve(origin.size() + path.size());
  full.append(origin).append(path);
  return full;
}

}  // namespace

std::optional<std::string> JoinPlainPath(std::string_view origin, std::string_view target) {
  bool whole = false;
  auto path = PlainPathOn(origin, target, whole);
  if (!path) return std::nullopt;
  return Joined(origin, *path);
}

bool MakePlainUrl(std::string_view origin, std::string& target) {
  bool whole = false;
  auto path = PlainPathOn(origin, target, whole);
  if (!path) return false;
  if (!whole) target = Joined(origin, *path);
  return true;
}

Result<ParsedUrl> ResolveTarget(const Origin& base, std::string_view origin,
                                std::string_view target) {
  if (auto full = JoinPlainPath(origin, target)) {
    bool has_query = full->find('?') != std::string::npos;
    return ParsedUrl{base, false, has_query, false, std::move(*full)};
  }
  if (target.substr(0, 2) == "//") return ParseUrl(base.scheme + ":" + std::string(target));
  if (!target.empty() && target.front() == '/') {
    return ParseUrl(std::string(origin) + std::string(target));
  }
  return ParseUrl(target);
}

Result<ParsedUrl> ResolveReference(std::string_view base_text, std::string_view reference) {
  if (auto ok = CheckBytes(reference); !ok) return tl::unexpected(ok.error());
  Parts base = Split(base_text);
  Parts ref = Split(reference);
  // RFC 3986 5.2.2, strict: a reference with a scheme is absolute.
  Parts target;
  std::string path;
  if (ref.scheme) {
    target.scheme = ref.scheme;
    target.authority = ref.authority;
    path = RemoveDotSegments(ref.path);
    target.query = ref.query;
  } else {
    target.scheme = base.scheme;
    if (ref.authority) {
      target.authority = ref.authority;
      path = RemoveDotSegments(ref.path);
      target.query = ref.query;
    } else {
      target.authority = base.authority;
      if (ref.path.empty()) {
        path = std::string(base.path);
        target.query = ref.query ? ref.query : base.query;
      } else {
        if (ref.path.front() == '/') {
          path = RemoveDotSegments(ref.path);
        } else {
          // 5.2.3: merge with the base's path up to its last '/'.
          std::string merged;
          if (base.authority && base.path.empty()) {
            merged.reserve(ref.path.size() + 1);  // not "/" + string: GCC 12 -Wrestrict misfires
            merged.append("/").append(ref.path);
          } else {
            std::size_t slash = base.path.rfind('/');
            merged = std::string(base.path.substr(0, slash == base.path.npos ? 0 : slash + 1));
            merged.append(ref.path);
          }
          path = RemoveDotSegments(merged);
        }
        target.query = ref.query;
      }
    }
  }
  target.path = path;
  target.fragment = ref.fragment;
  return FromParts(target);
}

}  // namespace outbound::http::internal
