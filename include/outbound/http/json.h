// SPDX-License-Identifier: Apache-2.0
//
// outbound/http/json.h — JSON bodies, for programs that use nlohmann/json.
// Optional and header-only: outbound's libraries do not use nlohmann/json,
// so only a program that includes this header needs it (CMake:
// find_package(nlohmann_json 3) and link nlohmann_json::nlohmann_json;
// Debian: nlohmann-json3-dev).
//
//   #include "outbound/http/json.h"
//
// example: examples/headers/http.cc#json
//   auto created = payments->Send(
//       http::Request::Post("/charges", http::Json({{"amount", 500}, {"currency", "eur"}}))
//           .Header("Idempotency-Key", key));
//   Result<nlohmann::json> charge = http::ReadJson(http::Require2xx(std::move(created)));
#ifndef OUTBOUND_HTTP_JSON_H_
#define OUTBOUND_HTTP_JSON_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "outbound/error.h"
#include "outbound/http/message.h"
#include "outbound/internal/ascii.h"

namespace outbound::http {

// `value` as a request body, serialized, with Content-Type: application/json.
inline Body Json(const nlohmann::json& value) { return Body{value.dump(), "application/json"}; }

// Whether a Content-Type value names JSON: application/json, or any type
// with the +json suffix (RFC 6839), in any case, parameters (a charset)
// allowed.
inline bool IsJsonContentType(std::string_view value) {
  std::string type(value.substr(0, value.find(';')));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.erase(0, 1);
  type = outbound::internal::AsciiLowered(std::move(type));
  return type == "application/json" ||
         (type.size() > 5 && type.find('/') != std::string::npos && type.ends_with("+json"));
}

// The response's body parsed as JSON. kInvalidResponse if its Content-Type
// does not say JSON (an HTML error page from a proxy is not parsed), or if
// it is not JSON; an error result passes through unchanged. Throws nothing.
[[nodiscard]] inline Result<nlohmann::json> ReadJson(const Result<Response>& result) {
  if (!result) return tl::unexpected(result.error());
  std::string_view type = result->header("Content-Type");
  if (!IsJsonContentType(type)) {
    Error error(ErrorKind::kInvalidResponse,
                type.empty()
                    ? std::string("the response has no Content-Type: not read as JSON")
                    : "the response's Content-Type is " + std::string(type) + ", not JSON");
    error.set_attempts(result->attempts);
    return tl::unexpected(std::move(error));
  }
  nlohmann::json value = nlohmann::json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    Error error(ErrorKind::kInvalidResponse, "the response's body is not JSON");
    error.set_attempts(result->attempts);
    return tl::unexpected(std::move(error));
  }
  return value;
}

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_JSON_H_
