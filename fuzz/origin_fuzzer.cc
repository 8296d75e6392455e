// SPDX-License-Identifier: Apache-2.0
// fuzz/origin_fuzzer.cc
//
// Fuzzes the URL and origin parsing every request goes through:
// internal::ParseUrl, JoinPlainPath (the cheap path for "/x") and
// ResolveTarget. Input (fuzz_input.h): the client's base URL (replaced by
// "https://payments:8443" when it is not one a client accepts), then a
// request target. Checks:
//   - nothing crashes, and no sanitizer reports undefined behaviour;
//   - a URL that parses is http or https with a host, and re-parsing its
//     normalized form gives the same origin (idempotence); so does parsing
//     the origin's own text, which the client joins paths onto;
//   - when JoinPlainPath returns a URL, it starts with the origin's text,
//     ResolveTarget on the same input agrees on the origin, and so does
//     the full parser on the joined URL: the cheap path never sends a
//     request somewhere libcurl would not;
//   - a target that starts with '/' never resolves to another origin.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "origin.h"

namespace outbound::fuzz {
namespace {

using http::internal::JoinPlainPath;
using http::internal::Origin;
using http::internal::ParsedUrl;
using http::internal::ParseUrl;
using http::internal::ResolveTarget;

bool IsHttpOrigin(const Origin& origin) {
  return (origin.scheme == "http" || origin.scheme == "https") && !origin.host.empty();
}

// The properties every parsed URL has, whatever the input.
void CheckParsed(const ParsedUrl& parsed) {
  FUZZ_CHECK(IsHttpOrigin(parsed.origin));
  Result<ParsedUrl> again = ParseUrl(parsed.full);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->origin == parsed.origin);
  Result<ParsedUrl> origin_only = ParseUrl(parsed.origin.ToString());
  FUZZ_CHECK(origin_only.has_value());
  FUZZ_CHECK(origin_only->origin == parsed.origin);
}

// The client's origin for `base_url`, as Settings would accept it.
Origin ClientOrigin(const std::string& base_url) {
  Result<ParsedUrl> base = ParseUrl(base_url);
  if (base && !base->has_user_info && !base->has_query && !base->has_fragment) {
    CheckParsed(*base);
    return base->origin;
  }
  return Origin{"https", "payments", 8443};
}

// Runs one input and checks every property on it.
void CheckOne(const std::uint8_t* data, std::size_t size) {
  FuzzFields fields(data, size);
  std::string base_url = fields.Next();
  std::string target = fields.Next();

  if (auto parsed = ParseUrl(target)) CheckParsed(*parsed);

  const Origin origin = ClientOrigin(base_url);
  const std::string origin_text = origin.ToString();
  auto resolved = ResolveTarget(origin, origin_text, target);
  if (resolved) CheckParsed(*resolved);
  // A path (one slash; "//host" is a network-path reference, RFC 3986 §4.2,
  // that names a host of its own) never leaves the origin.
  if (resolved && !target.empty() && target.front() == '/' &&
      (target.size() == 1 || target[1] != '/')) {
    FUZZ_CHECK(resolved->origin == origin);
  }

  if (auto joined = JoinPlainPath(origin_text, target)) {
    FUZZ_CHECK(std::string_view(*joined).substr(0, origin_text.size()) == origin_text);
    FUZZ_CHECK(resolved.has_value());
    FUZZ_CHECK(resolved->origin == origin);
    auto full = ParseUrl(*joined);
    FUZZ_CHECK(full.has_value());
    FUZZ_CHECK(full->origin == origin);
  }
}

}  // namespace
}  // namespace outbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  outbound::fuzz::CheckOne(data, size);
  return 0;
}
