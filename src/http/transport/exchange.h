// SPDX-License-Identifier: Apache-2.0
// One attempt inside the native transport (an exchange: a request sent, a
// response read), and what the codecs tell the pool. Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_EXCHANGE_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_EXCHANGE_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "../body_growth.h"
#include "../body_pipe_link.h"
#include "../body_upload.h"
#include "../client_transport.h"
#include "../endpoint_health.h"
#include "../gzip_decoder.h"
#include "../transport_spec.h"
#include "outbound/http/receive_window.h"

namespace outbound::http::internal::transport {

// A response's header section larger than this fails as too large (and is
// not retried): it is no answer a client should hold in memory.
inline constexpr std::size_t kMaxHeaderBytes = 96 * 1024;

class Connection;

struct Exchange {
  std::uint64_t id = 0;
  // Who hears what happens to the exchange (the attempt, to the transport
  // only its events), held until the exchange ends; and what to send.
  std::shared_ptr<ExchangeEvents> events;
  const CallRequest* request = nullptr;
  const AttemptFields* attempt_headers = nullptr;
  std::uint64_t* queue_place = nullptr;
  const Admission* admission = nullptr;
  // With several endpoints: the call's last endpoint
  // (ExchangeRequest::call_endpoint), and the one carrying this exchange,
  // set by the pool.
  std::atomic<std::uint64_t>* call_endpoint = nullptr;
  std::shared_ptr<EndpointHealth> endpoint;
  // The request's target ("/charges/1?x=y", a view of its URL) and
  // authority ("payments:8443").
  std::string_view path;
  const std::string* authority = nullptr;
  Response response;
  std::size_t max_body = 0;        // Settings::max_response_bytes
  std::size_t max_error_body = 0;  // Settings::max_error_response_bytes
  // Whose body the caller wants (TransportSpec::body_wanted), set by the
  // pool as it carries the exchange.
  BodyWanted body_wanted = nullptr;
  // Set once the head is whole (HeadWhole) when the caller does not want
  // its body: it is read and dropped, neither kept nor streamed, within
  // max_error_body (what a page nobody reads may cost) and past it the
  // exchange fails as too large. `dropped` counts it.
  bool body_dropped = false;
  std::size_t dropped = 0;
  // The limit on the body once the status is known: an error answer's
  // (400 and above) is the smaller.
  std::size_t BodyLimit() const {
    return response.status >= 400 ? std::min(max_body, max_error_body) : max_body;
  }
  // "body is larger than 1048576 bytes", naming the limit that applies.
  std::string TooLargeText() const {
    return std::string(response.status >= 400 ? "error answer's " : "") + "body is larger than " +
           std::to_string(BodyLimit()) + " bytes";
  }
  bool headers_done = false;
  std::size_t header_bytes = 0;       // decoded, each field's name and value
  std::size_t header_wire_bytes = 0;  // HTTP/2: HEADERS and CONTINUATION payloads
  bool header_block_open = false;     // HTTP/2: a header block awaits its CONTINUATION
  bool informational = false;         // HTTP/2: the header block being read is a 1xx
  bool status_seen = false;           // HTTP/2: the header block being read has its :status
  bool regular_seen = false;          // HTTP/2: ... and a regular field (no pseudo-header after)
  std::uint64_t body_received = 0;    // HTTP/2: DATA payload bytes so far
  bool end_stream = false;            // HTTP/2: END_STREAM arrived
  Connection* connection = nullptr;   // null while it waits in the pool's queue
  std::int32_t stream_id = -1;        // HTTP/2
  bool request_sent = false;          // HTTP/2: its HEADERS frame was written
  std::size_t body_offset = 0;        // HTTP/2: how much of the request body went out
  // A request body read as it is sent (Request::StreamBodyFrom), opened
  // when the exchange starts on a connection.
  std::optional<BodyUpload> upload;
  // The request's BodyPipe wakes this exchange (Dispatcher), until it ends.
  bool pipe_attached = false;
  std::optional<std::uint64_t> content_length;
  // The call's BodySink, if it has one; whether any of the body went to it.
  const BodySink* sink = nullptr;
  bool streamed = false;
  // With `sink`: who hears the head before the sink hears the body; null:
  // nobody.
  const BodyHeadSink* head_sink = nullptr;
  // With `sink`: the reader's flow control (ReceiveWindow), attached for
  // as long as the exchange lives; HTTP/2: body bytes taken while it was
  // held, not yet acknowledged to the server.
  ReceiveWindow* window = nullptr;
  std::size_t withheld = 0;
  // Whether the body is to stop flowing for now: it streams to a sink
  // whose reader is behind.
  bool Held() const { return window != nullptr && Streams() && window->held(); }
  // Whether the body goes to `sink`: a 2xx answer's (the status known)
  // that the caller wants.
  bool Streams() const { return sink != nullptr && response.successful() && !body_dropped; }
  // Whether the request body's upload is told to the attempt
  // (RequestHeadersSent, RequestBodySent), which then times the wait for
  // the answer apart from it: a pipe's, and a buffered one too long to go
  // with its head.
  bool TimedUpload() const {
    return upload ? upload->piped() : request->body.size() > kTimedUploadBytes;
  }
  // Set once the head says the body is gzip-coded and the call asked for
  // it to be decoded (Settings::gzip): the body is decoded as it arrives.
  std::unique_ptr<GzipDecoder> decoder;
  // What the codec decided when it had to end the exchange before the
  // stream or connection did (a limit, a malformed field). Rare, so held
  // apart: every exchange is rebuilt as it ends (Dispatcher::End), and an
  // outcome in place would be two fifths of its bytes.
  std::unique_ptr<AttemptOutcome> verdict;
  // HTTP/2: how the exchange ended, from its stream's close until the
  // session hands it to the pool (H2Session::Queue, Deliver), by reference
  // up to Dispatcher::End, which resets the exchange once it is taken.
  AttemptOutcome outcome;
};

// An outcome of `kind` with `message`, on `connection`.
inline AttemptOutcome Failed(ErrorKind kind, std::string message) {
  AttemptOutcome outcome;
  outcome.result = Fail(kind, std::move(message));
  return outcome;
}

// A response that breaks the protocol: kInvalidResponse, saying why, and
// not retried (sending the request again cannot make it well-formed).
inline AttemptOutcome Malformed(const std::string& why) {
  AttemptOutcome outcome = Failed(ErrorKind::kInvalidResponse, "the response is malformed: " + why);
  outcome.cannot_improve = true;
  return outcome;
}

// The caller's sink threw (call inside the catch): the exchange ends as
// one the caller stopped reading, final, and the exception goes to the
// caller as the call's `thrown`. It never unwinds through the transport
// (nghttp2's C frames, the event loop).
inline AttemptOutcome SinkThrew(Exchange& exchange, std::string_view which) {
  exchange.streamed = true;
  AttemptOutcome outcome =
      Failed(ErrorKind::kCancelled, "the caller's " + std::string(which) + " threw");
  outcome.thrown = std::current_exception();
  return outcome;
}

// Hands the sink a piece of a streamed body, or its end (empty): empty to
// go on, or the outcome that ends the exchange, the caller having stopped
// reading or found the body bad (BodySink), or its sink having thrown. A
// body found bad is final. Nothing reaches the sink of an attempt that was
// cancelled or has ended (a cancel from the sink itself, a deadline on
// another thread): the canceller, on its way to this thread, ends the
// exchange.
inline std::optional<AttemptOutcome> ToSink(Exchange& exchange, std::string_view piece) {
  if (exchange.events == nullptr || exchange.events->Cancelled()) return std::nullopt;
  Result<bool> answer = false;
  try {
    answer = (*exchange.sink)(piece);
  } catch (...) {
    return SinkThrew(exchange, "body sink");
  }
  if (answer && *answer) return std::nullopt;
  if (answer) return Failed(ErrorKind::kCancelled, "the caller stopped reading the body");
  exchange.streamed = true;
  AttemptOutcome outcome;
  outcome.result = tl::unexpected(std::move(answer.error()));
  return outcome;
}

// Hands the head sink the answer whose body is about to stream: empty to
// go on, or the outcome that ends the exchange, the caller having refused
// the answer (BodyHeadSink), or thrown. Refused is final, as a body found
// bad.
inline std::optional<AttemptOutcome> ToHeadSink(Exchange& exchange) {
  if (exchange.events == nullptr || exchange.events->Cancelled()) return std::nullopt;  // as ToSink
  Result<void> heard;
  try {
    heard = (*exchange.head_sink)(exchange.response);
  } catch (...) {
    return SinkThrew(exchange, "body head sink");
  }
  if (heard) return std::nullopt;
  exchange.streamed = true;
  AttemptOutcome outcome;
  outcome.result = tl::unexpected(std::move(heard.error()));
  return outcome;
}

// Takes a piece of the (decoded) body: to the sink when the body streams,
// else into the response within max_body. Empty, or the outcome that ends
// the exchange (too large, the caller stopped reading or found it bad).
inline std::optional<AttemptOutcome> TakeBody(Exchange& exchange, std::string_view piece) {
  if (exchange.Streams()) {
    if (piece.empty()) return std::nullopt;  // the sink's empty piece is the end
    if (!exchange.streamed && exchange.head_sink != nullptr) {
      if (auto verdict = ToHeadSink(exchange)) return verdict;
    }
    if (auto verdict = ToSink(exchange, piece)) return verdict;
    // The answer's first piece: a stream is never sent again from here, so
    // its pipe lets go of what it kept for that.
    if (!exchange.streamed && exchange.request->body_source.pipe) {
      PipeLink::Commit(*exchange.request->body_source.pipe);
    }
    exchange.streamed = true;
    return std::nullopt;
  }
  if (exchange.body_dropped) {
    exchange.dropped += piece.size();
    if (exchange.dropped <= exchange.max_error_body) return std::nullopt;
    return Failed(ErrorKind::kResponseTooLarge,
                  "the response's body, which the client does not keep, is larger than " +
                      std::to_string(exchange.max_error_body) + " bytes");
  }
  if (!AppendWithin(exchange.response.body, piece, exchange.BodyLimit())) {
    return Failed(ErrorKind::kResponseTooLarge, std::string("the response's ") +
                                                    (exchange.decoder ? "decoded " : "") +
                                                    exchange.TooLargeText());
  }
  return std::nullopt;
}

// Takes body bytes as they came on the wire: decoded first when the body
// is gzip-coded, so the limit and the sink see the decoded bytes.
inline std::optional<AttemptOutcome> TakeWireBody(Exchange& exchange, std::string_view wire) {
  if (!exchange.decoder) return TakeBody(exchange, wire);
  std::optional<AttemptOutcome> verdict;
  auto take = [&](std::string_view piece) {
    verdict = TakeBody(exchange, piece);
    return !verdict;
  };
  switch (exchange.decoder->Feed(wire, take)) {
    case GzipDecoder::Status::kOk:
    case GzipDecoder::Status::kStopped:
      return verdict;
    case GzipDecoder::Status::kNoMemory:
      return Failed(ErrorKind::kLocalResource, "no memory to decode the gzip body");
    case GzipDecoder::Status::kCorrupt:
      break;
  }
  return Malformed("its gzip-coded body does not decode");
}

// Sets `outcome` (a fresh one) to the answer of an exchange whose response
// ended whole: the response, unless its gzip-coded body ended inside the
// gzip stream, or the sink, told the end of the body it was given, finds
// it bad. A sink given nothing hears no end: its answer may yet be
// retried, and another body may follow. Written in place: an outcome is
// large, and this is every call's path.
inline void TakeAnswer(Exchange& exchange, AttemptOutcome& outcome) {
  if (exchange.decoder && !exchange.decoder->complete()) {
    outcome = Malformed("its gzip-coded body ended before the gzip stream did");
    return;
  }
  if (exchange.streamed) {
    if (auto verdict = ToSink(exchange, std::string_view("", 0))) {
      outcome = std::move(*verdict);
      return;
    }
  }
  outcome.result = std::move(exchange.response);
}

// Whether the final answer has no body whatever its headers say.
inline bool HasNoBody(const Exchange& exchange) {
  return internal::HasNoBody(exchange.request->method, exchange.response.status);
}

// Called once the head is whole: drops a body the caller does not want
// (body_wanted), else starts decoding it if the head says it is gzip-coded
// and the call asked for decoding.
inline void HeadWhole(Exchange& exchange) {
  if (exchange.body_wanted != nullptr && !exchange.body_wanted(exchange.response)) {
    exchange.body_dropped = true;
  } else if (exchange.request->decode_gzip && !HasNoBody(exchange) &&
             GzipDecoder::IsGzip(exchange.response.headers.Find("content-encoding"))) {
    exchange.decoder = std::make_unique<GzipDecoder>();
  }
}

// Calls `field(name, value)` for each header the exchange sends: the
// attempt's own (the trace context, grpc-timeout), then the request's, less
// any the attempt's replace.
template <class Field>
void ForEachRequestHeader(const Exchange& exchange, Field&& field) {
  const AttemptFields& own = *exchange.attempt_headers;
  for (const auto& [name, value] : own) field(name, value);
  for (const auto& [name, value] : exchange.request->headers) {
    bool replaced = false;
    for (const auto& header : own) replaced = replaced || SameHeaderName(name, header.name);
    if (!replaced) field(std::string_view(name), std::string_view(value));
  }
}

// The status code of a status field ("200"): three digits, 100 to 599; 0
// if it is not one.
inline int ParseStatus(std::string_view text) {
  if (text.size() != 3) return 0;
  int code = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    code = code * 10 + (c - '0');
  }
  return code >= 100 && code <= 599 ? code : 0;
}

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_EXCHANGE_H_
