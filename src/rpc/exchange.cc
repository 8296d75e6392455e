// SPDX-License-Identifier: Apache-2.0
#include "exchange.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "../http/url_path.h"
#include "wire/framing.h"
#include "wire/metadata.h"
#include "wire/status.h"

namespace outbound::rpc::internal {
namespace {

// The status gRPC gives a stream the server reset (doc/PROTOCOL-HTTP2.md,
// "Errors"): CANCEL is CANCELLED, REFUSED_STREAM UNAVAILABLE,
// ENHANCE_YOUR_CALM RESOURCE_EXHAUSTED, INADEQUATE_SECURITY
// PERMISSION_DENIED, every other code INTERNAL.
Code CodeForStreamReset(std::uint32_t http2_code) {
  switch (http2_code) {
    case 0x8:
      return Code::kCancelled;
    case 0x7:
      return Code::kUnavailable;
    case 0xb:
      return Code::kResourceExhausted;
    case 0xc:
      return Code::kPermissionDenied;
    default:
      return Code::kInternal;
  }
}

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
      if (auto reset = error.stream_reset_code()) return {CodeForStreamReset(*reset), message};
      return {Code::kUnavailable, message};
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

// The one message of an answer that must hold exactly one (a unary
// call's), decoded by the answer's grpc-encoding, within `limit` bytes.
StatusOr<std::string> OnlyMessage(const http::Response& response, std::size_t limit) {
  std::string message;
  std::size_t count = 0;
  Deframer deframer(FindField(response.headers, "grpc-encoding").value_or(""), limit,
                    [&](std::string m, bool /*compressed: never, decoded*/) {
                      if (++count == 1) message = std::move(m);
                    });
  Status status = deframer.Feed(response.body);
  if (status.ok()) status = deframer.Finish();
  if (!status.ok()) return tl::unexpected(std::move(status));
  if (count != 1) {
    return FailWith(Code::kInternal,
                    "a unary answer held " + std::to_string(count) + " messages, not 1");
  }
  return message;
}

// Whether a unary answer with status OK is one whole length-prefixed
// message the client can decode: CheckPrefix's code for a prefix it
// refuses (a flag neither 0 nor 1, compressed without an encoding or with
// one the client does not decode, announced over `receive_limit`),
// INTERNAL when the body ends inside a prefix or a message, or holds no
// message or several. Only the prefixes are read, nothing is copied or
// inflated.
Status UnaryFramingOf(const http::Response& response, std::size_t receive_limit) {
  std::string_view body = response.body;
  std::string_view encoding = response.headers.Find("grpc-encoding");
  std::size_t count = 0;
  while (!body.empty()) {
    if (body.size() < kFramePrefixSize) {
      return {Code::kInternal, "the response ended inside a message's prefix"};
    }
    std::size_t length = 0;
    for (std::size_t i = 1; i < kFramePrefixSize; ++i) {
      length = (length << 8) | static_cast<unsigned char>(body[i]);
    }
    Status wrong = CheckPrefix(static_cast<unsigned char>(body[0]), length, encoding, receive_limit,
                               count + 1);
    if (!wrong.ok()) return wrong;
    if (body.size() - kFramePrefixSize < length) {
      return {Code::kInternal, "the response ended inside a message"};
    }
    body.remove_prefix(kFramePrefixSize + length);
    ++count;
  }
  if (count != 1) {
    return {Code::kInternal, "a unary answer held " + std::to_string(count) + " messages, not 1"};
  }
  return {};
}

}  // namespace

StatusOr<http::Request> CallRequest(std::string_view method, const Context& context,
                                    bool accept_gzip) {
  std::string path(method);
  if (path.empty() || path.front() != '/') path.insert(path.begin(), '/');
  http::Request request = http::Request::Post(std::move(path), "");
  // Room for these three, grpc-encoding, and the Accept-Encoding the
  // core's CheckRequest may add: one allocation.
  request.headers.reserve(5 + context.metadata.size());
  request.Header("content-type", "application/grpc");
  request.Header("te", "trailers");
  if (accept_gzip) request.Header("grpc-accept-encoding", "gzip");
  if (Status added = AppendRequestMetadata(context.metadata, request.headers); !added.ok()) {
    return tl::unexpected(std::move(added));
  }
  request.WithContext(context);
  // Sent above as gRPC codes it: the core adds a context's metadata as it is.
  request.context.metadata.clear();
  return request;
}

StatusOr<http::Request> MessageRequest(std::string_view method, std::string_view message,
                                       const Context& context, std::size_t send_limit, bool gzip,
                                       bool accept_gzip) {
  StatusOr<std::string> body = FrameForSending(message, send_limit, gzip);
  if (!body) return tl::unexpected(std::move(body.error()));
  StatusOr<http::Request> request = CallRequest(method, context, accept_gzip);
  if (!request) return request;
  if (gzip) request->Header("grpc-encoding", "gzip");
  request->body = std::move(*body);
  return request;
}

Status StatusOf(const Result<http::Response>& result) {
  if (!result) return StatusOfError(result.error());
  return StatusOfResponse(result->status, result->headers, result->trailers);
}

Trailers TrailersOf(const http::Response& response) { return MetadataOf(StatusFields(response)); }

Metadata HeadersOf(const http::Response& response) {
  // Trailers-Only: the headers are the trailers, and there is no initial
  // metadata.
  if (response.trailers.empty()) return {};
  return MetadataOf(response.headers);
}

std::string_view MethodOf(std::string_view url) { return http::internal::PathOf(url); }

Status AttemptStatusOf(const Result<http::Response>& result, bool body_streams,
                       std::size_t receive_limit) {
  Status status = StatusOf(result);
  if (status.ok() && result && !body_streams) status = UnaryFramingOf(*result, receive_limit);
  return status;
}

http::Classify CoreClassify(Classify classify, std::size_t receive_limit) {
  return [classify = std::move(classify), receive_limit](const http::SentRequest& sent,
                                                         const Result<http::Response>& result) {
    // A malformed answer under status OK is the dependency's failure, as
    // the caller hears it (ReplyOf): classify is told so.
    Status status = AttemptStatusOf(result, sent.body_streams, receive_limit);
    Trailers trailers = result ? TrailersOf(*result) : Trailers{};
    Classification c = classify(MethodOf(sent.url), status, trailers);
    return http::Classification{c.retry, c.retry_after, c.breaker};
  };
}

std::vector<http::RoutePolicy> CoreRoutes(const std::vector<MethodPolicy>& methods,
                                          std::size_t receive_limit) {
  std::vector<http::RoutePolicy> routes;
  routes.reserve(methods.size());
  for (const MethodPolicy& m : methods) {
    routes.push_back({m.method, m.timeout, m.attempt_timeout, m.max_attempts,
                      m.classify ? CoreClassify(m.classify, receive_limit) : http::Classify()});
  }
  return routes;
}

http::BodySink DeframingSink(std::shared_ptr<Deframer> deframer) {
  return [deframer = std::move(deframer)](std::string_view chunk) -> Result<bool> {
    Status status = chunk.empty() ? deframer->Finish() : deframer->Feed(chunk);
    if (status.ok()) return true;
    ErrorKind kind = status.code == Code::kResourceExhausted ? ErrorKind::kResponseTooLarge
                                                             : ErrorKind::kInvalidResponse;
    return Fail(kind, status.message);
  };
}

http::BodyHeadSink DeframingHead(std::shared_ptr<Deframer> deframer) {
  return [deframer = std::move(deframer)](const http::Response& head) -> Result<void> {
    // The transport drops another answer's body before it streams
    // (FrontEnd::body_wanted); this holds if one came all the same.
    if (!IsGrpcAnswer(head)) {
      deframer->IgnoreBody();
    } else {
      deframer->SetEncoding(FindField(head.headers, "grpc-encoding").value_or(""));
    }
    return {};
  };
}

Reply ReplyOf(Result<http::Response> result, std::size_t receive_limit) {
  Reply reply;
  reply.attempts = result ? result->attempts : result.error().attempts();
  reply.status = StatusOf(result);
  if (!result) return reply;
  reply.trailers = TrailersOf(*result);
  reply.headers = HeadersOf(*result);
  if (!reply.status.ok()) return reply;
  auto message = OnlyMessage(*result, receive_limit);
  if (!message) {
    reply.status = std::move(message.error());
  } else {
    reply.body = std::move(*message);
  }
  return reply;
}

}  // namespace outbound::rpc::internal
