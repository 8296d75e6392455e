// SPDX-License-Identifier: Apache-2.0
#include "status.h"

#include <optional>

#include "metadata.h"

namespace outbound::rpc::internal {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// grpc-status as gRPC writes it: 0-16 in decimal without a leading zero.
std::optional<Code> ParseCode(std::string_view value) {
  if (value.empty() || value.size() > 2) return std::nullopt;
  if (value.size() == 2 && value[0] == '0') return std::nullopt;
  int number = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    number = number * 10 + (c - '0');
  }
  if (number > static_cast<int>(Code::kUnauthenticated)) return std::nullopt;
  return static_cast<Code>(number);
}

}  // namespace

bool IsGrpcContentType(std::string_view type) {
  constexpr std::string_view kGrpc = "application/grpc";
  if (!outbound::internal::StartsWithIgnoringAsciiCase(type, kGrpc)) return false;
  if (type.size() == kGrpc.size()) return true;
  char next = type[kGrpc.size()];
  return next == '+' || next == ';';
}

bool IsGrpcAnswer(const http::Response& head) {
  if (head.status != 200) return false;
  std::optional<std::string_view> type = FindField(head.headers, "content-type");
  return type && IsGrpcContentType(*type);
}

std::string EncodeStatusMessage(std::string_view message) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  encoded.reserve(message.size());
  for (char c : message) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte <= 0x7E && byte != '%') {
      encoded += c;
    } else {
      encoded += '%';
      encoded += kHex[byte >> 4];
      encoded += kHex[byte & 0x0F];
    }
  }
  return encoded;
}

std::string DecodeStatusMessage(std::string_view encoded) {
  std::string message;
  message.reserve(encoded.size());
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%' && i + 2 < encoded.size() && HexValue(encoded[i + 1]) >= 0 &&
        HexValue(encoded[i + 2]) >= 0) {
      message += static_cast<char>(HexValue(encoded[i + 1]) * 16 + HexValue(encoded[i + 2]));
      i += 2;
    } else {
      message += encoded[i];
    }
  }
  return message;
}

Code CodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 400:
    case 431:
      return Code::kInternal;
    case 401:
      return Code::kUnauthenticated;
    case 403:
      return Code::kPermissionDenied;
    case 404:
      return Code::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return Code::kUnavailable;
    default:
      return Code::kUnknown;
  }
}

Status StatusOfResponse(int http_status, const http::ResponseHeaders& headers,
                        const http::ResponseHeaders& trailers) {
  // A Trailers-Only answer has its grpc-status among the headers.
  const http::ResponseHeaders& status_fields = trailers.empty() ? headers : trailers;
  std::optional<std::string_view> message = FindField(status_fields, "grpc-message");
  std::optional<std::string_view> status = FindField(status_fields, "grpc-status");
  if (http_status != 200) {
    // A grpc-status the answer holds is its status, whatever the HTTP
    // status: the mapping is for answers without one (nginx's gRPC error
    // pages answer 204 with grpc-status 14). But an error page is never a
    // success: under it, an OK grpc-status leaves the mapped code.
    std::optional<Code> code = status ? ParseCode(*status) : std::nullopt;
    if (code && *code != Code::kOk) {
      return Status{*code, message ? DecodeStatusMessage(*message) : std::string()};
    }
    std::string text = "HTTP status " + std::to_string(http_status);
    if (message) text += ": " + DecodeStatusMessage(*message);
    return Status{CodeForHttpStatus(http_status), std::move(text)};
  }
  std::optional<std::string_view> content_type = FindField(headers, "content-type");
  if (!content_type) return Status{Code::kUnknown, "the answer had no content-type"};
  if (!IsGrpcContentType(*content_type)) {
    return Status{Code::kUnknown, "the answer's content-type is \"" + std::string(*content_type) +
                                      "\", not application/grpc"};
  }
  if (!status) return Status{Code::kInternal, "the answer had no grpc-status"};
  std::optional<Code> code = ParseCode(*status);
  if (!code) {
    return Status{Code::kUnknown, "the answer's grpc-status \"" + std::string(*status) +
                                      "\" is not a code from 0 to 16"};
  }
  return Status{*code, message ? DecodeStatusMessage(*message) : std::string()};
}

}  // namespace outbound::rpc::internal
