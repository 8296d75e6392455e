// SPDX-License-Identifier: Apache-2.0
// fuzz/request_check_fuzzer.cc
//
// Fuzzes internal::CheckRequest, the gate every request passes before
// anything is dialled. Input (fuzz_input.h): the client's base URL
// (replaced by "https://payments:8443" when it is not one a client
// accepts), the method, the URL, then header names and values, a field
// each. Checks, for every request CheckRequest accepts:
//   - its method and header names are tokens (RFC 9110 tchar);
//   - no header value holds a byte 0x00-0x1F other than HTAB, or 0x7F
//     (issue 11, case 6);
//   - its URL parses and is on the client's origin, scheme and host compared
//     case-insensitively as RFC 3986 says (issue 11, case 7), and holds no
//     user info;
//   - it sets none of Host, Content-Length, Transfer-Encoding, Connection,
//     Upgrade, TE, Keep-Alive, Proxy-* or a pseudo-header (issue 11,
//     case 5): the transport writes those itself.
// and, for every request, that nothing crashes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_input.h"
#include "origin.h"
#include "request_check.h"

namespace outbound::fuzz {
namespace {

using http::internal::Origin;
using http::internal::ParsedUrl;
using http::internal::ParseUrl;

// Past this many, more headers find nothing new and only slow the run.
constexpr int kMaxHeaders = 32;

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool SameIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

bool StartsIgnoringCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && SameIgnoringCase(text.substr(0, prefix.size()), prefix);
}

bool IsToken(std::string_view text) {
  constexpr std::string_view kSeparators = "()<>@,;:\\\"/[]?={}";
  if (text.empty()) return false;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 32 || byte >= 127 || kSeparators.find(c) != kSeparators.npos) return false;
  }
  return true;
}

bool HasControlByte(std::string_view value) {
  for (char c : value) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7F) return true;
  }
  return false;
}

// A header the caller must not set: the transport writes it from the URL
// and the body, or it is hop-by-hop.
bool IsReservedHeader(std::string_view name) {
  constexpr std::string_view kReserved[] = {
      "Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "TE", "Keep-Alive"};
  for (std::string_view reserved : kReserved) {
    if (SameIgnoringCase(name, reserved)) return true;
  }
  return StartsIgnoringCase(name, "Proxy-") || (!name.empty() && name.front() == ':');
}

bool SameOrigin(const Origin& a, const Origin& b) {
  return SameIgnoringCase(a.scheme, b.scheme) && SameIgnoringCase(a.host, b.host) &&
         a.port == b.port;
}

Origin ClientOrigin(const std::string& base_url) {
  Result<ParsedUrl> base = ParseUrl(base_url);
  if (base && !base->has_user_info && !base->has_query && !base->has_fragment) {
    return base->origin;
  }
  return Origin{"https", "payments", 8443};
}

// Runs one input and checks every property on it.
void CheckOne(const std::uint8_t* data, std::size_t size) {
  FuzzFields fields(data, size);
  const Origin origin = ClientOrigin(fields.Next());
  const std::string origin_text = origin.ToString();
  http::Request request;
  request.method = fields.Next();
  request.url = fields.Next();
  for (int i = 0; i < kMaxHeaders && !fields.done(); ++i) {
    std::string name = fields.Next();
    request.headers.emplace_back(std::move(name), fields.Next());
  }

  auto checked = http::internal::CheckRequest(origin, origin_text, request);
  if (!checked) return;
  const http::internal::CallRequest sent = http::internal::TakeCallRequest(request, *checked);
  FUZZ_CHECK(IsToken(sent.method));
  for (const auto& [name, value] : sent.headers) {
    FUZZ_CHECK(IsToken(name));
    FUZZ_CHECK(!HasControlByte(value));
    // `TE: trailers`, the one TE HTTP/2 allows, passes, spelt as HTTP/2 does.
    FUZZ_CHECK(!IsReservedHeader(name) || (SameIgnoringCase(name, "TE") && value == "trailers"));
  }
  auto url = ParseUrl(sent.url);
  FUZZ_CHECK(url.has_value());
  FUZZ_CHECK(SameOrigin(url->origin, origin));
  FUZZ_CHECK(!url->has_user_info);
}

}  // namespace
}  // namespace outbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  outbound::fuzz::CheckOne(data, size);
  return 0;
}
