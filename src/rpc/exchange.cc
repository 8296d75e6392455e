// SPDX-License-Identifier: Apache-2.0
#include "exchange.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <utility>

#include "wire.h"

namespace outbound::rpc::internal {
namespace {

// The core's error as the status gRPC gives the same failure.
Status StatusOfError(const Error& error) {
  const std::string& message = error.message();
  switch (error.kind()) {
    case ErrorKind::kCancelled:
      return {Code::kCancelled, message};
    case ErrorKind::kDeadline:
      return {Code::kDeadlineExceeded, message};
    case ErrorKind::kRejected:
      return {Code::kUnavailable, message, /*rejected=*/true};
    case ErrorKind::kTransport:
    case ErrorKind::kTlsUntrusted:
      return {Code::kUnavailable, message};
    case ErrorKind::kResponseTooLarge:
    case ErrorKind::kLocalResource:
      return {Code::kResourceExhausted, message};
    case ErrorKind::kInvalidResponse:
    case ErrorKind::kInvalidRequest:
      return {Code::kInternal, message};
    default:
      return {Code::kUnknown, message};
  }
}

// Where the status is: the trailers, or the headers of a trailers-only
// answer.
const http::ResponseHeaders& StatusFields(const http::Response& response) {
  return response.trailers.empty() ? response.headers : response.trailers;
}

bool Reserved(std::string_view name) {
  return name == "grpc-status" || name == "grpc-message" || name == "content-type" ||
         (!name.empty() && name.front() == ':');
}

}  // namespace

http::Request MessageRequest(std::string_view method, std::string_view message,
                             const Context& context) {
  std::string path(method);
  if (path.empty() || path.front() != '/') path.insert(path.begin(), '/');
  http::Request request = http::Request::Post(std::move(path), FrameMessage(message));
  request.Header("content-type", "application/grpc");
  request.Header("te", "trailers");
  request.WithContext(context);
  return request;
}

Status StatusOf(const Result<http::Response>& result) {
  if (!result) return StatusOfError(result.error());
  const http::Response& response = *result;
  if (response.status != 200) {
    Status status{CodeForHttpStatus(response.status),
                  "HTTP status " + std::to_string(response.status)};
    std::string_view message = StatusFields(response).Find("grpc-message");
    if (!message.empty()) status.message += ": " + DecodeStatusMessage(message);
    return status;
  }
  const http::ResponseHeaders& fields = StatusFields(response);
  std::string_view code_text = fields.Find("grpc-status");
  if (code_text.empty()) return {Code::kInternal, "the answer had no grpc-status"};
  int code = -1;
  auto [end, ec] = std::from_chars(code_text.data(), code_text.data() + code_text.size(), code);
  if (ec != std::errc() || end != code_text.data() + code_text.size() || code < 0 || code > 16) {
    return {Code::kUnknown, "the answer's grpc-status is " + std::string(code_text)};
  }
  return {static_cast<Code>(code), DecodeStatusMessage(fields.Find("grpc-message"))};
}

Trailers TrailersOf(const http::Response& response) {
  Trailers trailers;
  for (const auto& field : StatusFields(response)) {
    std::string name(field.name);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!Reserved(name)) trailers.emplace(std::move(name), std::string(field.value));
  }
  return trailers;
}

std::string_view MethodOf(std::string_view url) {
  std::size_t scheme = url.find("://");
  std::size_t path = url.find('/', scheme == std::string_view::npos ? 0 : scheme + 3);
  return path == std::string_view::npos ? std::string_view("/") : url.substr(path);
}

http::Classify CoreClassify(Classify classify) {
  return [classify = std::move(classify)](const http::SentRequest& sent,
                                          const Result<http::Response>& result) {
    Status status = StatusOf(result);
    Trailers trailers = result ? TrailersOf(*result) : Trailers{};
    Classification c = classify(MethodOf(sent.url), status, trailers);
    return http::Classification{c.retry, c.retry_after, c.breaker};
  };
}

Reply ReplyOf(Result<http::Response> result, std::size_t receive_limit) {
  Reply reply;
  reply.attempts = result ? result->attempts : result.error().attempts();
  reply.status = StatusOf(result);
  if (!result) return reply;
  reply.trailers = TrailersOf(*result);
  if (!reply.status.ok()) return reply;
  auto message = OnlyMessage(result->body, receive_limit);
  if (!message) {
    reply.status = std::move(message.error());
  } else {
    reply.body = std::move(*message);
  }
  return reply;
}

}  // namespace outbound::rpc::internal
