// SPDX-License-Identifier: Apache-2.0
// The narrow interface between the attempt layers and what carries an
// attempt over the wire: a client's transport is handed an exchange (what
// to send) and the events to report to (what happens to it), and knows no
// layer, breaker or timer. The attempt is the events' listener and tells
// the layers (attempt.h). Internal.
#ifndef OUTBOUND_SRC_HTTP_CLIENT_TRANSPORT_H_
#define OUTBOUND_SRC_HTTP_CLIENT_TRANSPORT_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "call.h"
#include "outbound/clock.h"
#include "outbound/http/classify.h"
#include "outbound/http/message.h"
#include "outbound/http/settings.h"

namespace outbound::http::internal {

class EndpointHealth;

// How one attempt ended, on its way up the layers.
struct AttemptOutcome {
  // Always replaced; made in place, short enough not to allocate.
  Result<Response> result{tl::unexpect, Error(ErrorKind::kTransport, "no attempt")};
  bool body_failed = false;                      // the error came after the headers
  bool rejected = false;                         // the breaker said no: nothing was sent
  std::optional<Classification> classification;  // set by the classify layer
  bool classify_threw = false;  // `thrown` is the user's classify's (the classify layer)
  std::exception_ptr thrown;    // the user's classify or policy threw
  AttemptRecord record;         // filled by the attempt span
  // When the attempt ended, on the client's clock: the time the transport
  // read its answer's last bytes, or else read once as it ends
  // (Attempt::End); the "now" of its layers' Finish and its owner's
  // decision.
  TimePoint ended{};

  // Set by the transport. The connection that carried the attempt (0: it
  // never had one), and whether the error is that connection's end rather
  // than this request's own: every attempt on a connection that drops ends
  // at once, and the breaker counts that as one failure, not one per attempt.
  std::uint64_t connection = 0;
  bool connection_lost = false;
  // The server refused the request without processing it (an HTTP/2
  // stream refused on a connection that carried nothing before it): it is
  // retried whatever its method, and is not the dependency's failure.
  bool unprocessed = false;
  // Set by the transport: nothing of the request left the client (its
  // connection never opened, or closed before the request's turn). It may
  // go again whatever its method, as an unprocessed one may; unlike that,
  // it is the dependency's failure, counted by the breaker as any other.
  bool not_sent = false;
  // With `unprocessed`: the stream was left out by its connection's
  // graceful end, a GOAWAY that kept earlier streams (a server rotating
  // connections, as nginx does after keepalive_requests).
  // That is no sign of load: it is sent again on a new connection without
  // spending TransparentRetries, a bounded number of times per request.
  bool connection_retired = false;
  // Set by the transport (HTTP/2), with `unprocessed`: the request was the
  // first above the last-stream-id of a GOAWAY whose error a request can
  // cause, the one the server met as it failed the connection. The classify
  // layer takes the second such end of a call's attempts for the request's
  // own failure (kInvalidRequest, not sent again: behind HAProxy each
  // resend of a request over its buffers ends the next connection and the
  // calls on it); one alone is left out, as the streams beside it are (a
  // server that limits a client's resets ends a connection so as well).
  bool met_connection_failure = false;
  // Set by the transport (HTTP/1.1): the server closed a connection it had
  // kept alive (it carried an answer before) before a byte of this
  // attempt's answer came (an interim one neither), within a second of the
  // request's hand-over: its idle close, its request limit or its restart
  // crossing the request, which it may or may not have read. That
  // is no sign of the dependency's health: the breaker and outlier
  // detection leave it out, and it goes again at once on another
  // connection if it is safe to repeat, as a collateral loss does.
  bool kept_alive_closed = false;
  // Set by the transport: part of the body went to the call's BodySink.
  // The attempt is then final, whatever classify says.
  bool body_streamed = false;
  // The transport knows that sending the request again cannot help (a TLS
  // protocol refusal, a malformed response): the attempt is not retried.
  bool cannot_improve = false;
  // Set by the classify layer: another attempt already counted this
  // attempt's connection loss, or the loss was a kept-alive connection's
  // end (kept_alive_closed). It is retried at once, outside the budget
  // and MaxAttempts (a few times per request), if it is safe to repeat.
  bool collateral = false;
  // Set by the attempt middleware layer: a middleware asks for the request
  // to be sent once more at once (a refreshed credential).
  bool repeat_once = false;
  // Set by the attempt middleware layer: a middleware answered or failed
  // the attempt itself. Nothing was sent, but the result is classified,
  // counted and retried as a sent attempt's would be.
  bool answered_by_middleware = false;
  // With several endpoints (Settings::balancing): the one that carried the
  // attempt, set by the dispatcher; set by the outlier-detection layer,
  // whether this attempt's failure ejected it, and whether the failure is
  // the endpoint's alone, taken by its ejection (this one or one before
  // it): the breaker does not count it.
  std::shared_ptr<EndpointHealth> endpoint;
  bool ejected_endpoint = false;
  bool endpoint_took_failure = false;
};

// The header fields an attempt adds to its request, each sent in place of
// the request's own field of that name: the trace context (traceparent,
// tracestate, baggage) and gRPC's grpc-timeout and
// grpc-previous-rpc-attempts. They are made for every attempt, so adding
// one allocates nothing: a value is copied into room kept here (a
// traceparent's 55 bytes and gRPC's few fit), and only
// one longer than the room left (a caller's tracestate or baggage) into a
// string of its own.
class AttemptFields {
 public:
  struct Field {
    std::string_view name;
    std::string_view value;
  };
  // At most this many: the trace context's three and gRPC's two.
  static constexpr std::size_t kMaxFields = 5;

  AttemptFields() = default;
  // The values are views of this object's own room: not copied or moved.
  AttemptFields(const AttemptFields&) = delete;
  AttemptFields& operator=(const AttemptFields&) = delete;

  // Adds a field named `name`, which must be a string literal, with a copy
  // of `value` (not a view of these fields' own values). A field past kMaxFields is a bug in the
  // library: it fails an assertion in a debug build and is left out in a release one.
  void Add(std::string_view name, std::string_view value) {
    assert(count_ < kMaxFields && "an attempt adds at most five fields");
    if (count_ == kMaxFields) return;
    std::string_view kept;
    if (value.size() <= room_.size() - used_) {
      char* at = room_.data() + used_;
      std::copy(value.begin(), value.end(), at);
      used_ += value.size();
      kept = std::string_view(at, value.size());
    } else {
      if (long_values_ == nullptr) long_values_ = std::make_unique<std::string[]>(kMaxFields);
      kept = long_values_[count_].assign(value);
    }
    fields_[count_++] = Field{name, kept};
  }
  void clear() {
    count_ = 0;
    used_ = 0;
  }

  const Field* begin() const { return fields_.data(); }
  const Field* end() const { return fields_.data() + count_; }
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

 private:
  std::array<Field, kMaxFields> fields_;  // the first count_ are set
  std::size_t count_ = 0;
  // A traceparent (55), a grpc-timeout (at most 9) and an attempt count (at
  // most 10).
  std::array<char, 80> room_;
  std::size_t used_ = 0;
  std::unique_ptr<std::string[]> long_values_;  // made for the first value the room cannot hold
};

// The breaker's last word before the transport sends an exchange that
// waited in its queue: false when the breaker that admitted it has opened
// by `now`, so it is failed as rejected and nothing is sent.
class Admission {
 public:
  virtual bool StillAdmitted(TimePoint now) const = 0;

 protected:
  ~Admission() = default;
};

// What to send. Everything it points to lives as long as the exchange's
// events (the transport holds those until it ends the exchange).
struct ExchangeRequest {
  const CallRequest* request = nullptr;
  // The attempt's own headers (the trace context, `grpc-timeout`): each
  // sent in place of the request's own header of that name.
  const AttemptFields* attempt_headers = nullptr;
  // Where the body of a 2xx answer goes as it arrives; null: into
  // Response::body.
  const BodySink* body_sink = nullptr;
  // With body_sink: hears that answer's head first; null: nobody does.
  const BodyHeadSink* body_head = nullptr;
  // With body_sink: held while its reader is behind; null: never held.
  ReceiveWindow* receive_window = nullptr;
  // The exchange's place in the transport's queue: 0 until queued. Kept
  // by a request sent again because a connection's end left it out, so it
  // keeps its turn.
  std::uint64_t* queue_place = nullptr;
  // Null: always admitted.
  const Admission* admission = nullptr;
  // With several endpoints: the call's last endpoint (EndpointHealth::id,
  // 0 for none), which this attempt avoids when another can take it (a
  // retry or a hedge goes elsewhere), and where the carrier writes the
  // one it chose. The call's; it outlives the exchange.
  std::atomic<std::uint64_t>* call_endpoint = nullptr;
};

// A buffered request body longer than this may take more than one write
// (a slow link, a server that reads slowly): its upload is told
// (RequestHeadersSent, RequestBodySent), and the attempt's header timers
// pause while it goes. A shorter one goes with its head.
inline constexpr std::size_t kTimedUploadBytes = 64 * 1024;

// What the transport reports of one exchange. Thread-safe.
class ExchangeEvents {
 public:
  // The transport has the exchange. False if it was cancelled before: the
  // transport then sends nothing and ends it with CancelledOutcome().
  [[nodiscard]] virtual bool Launch() = 0;
  // How to cancel the exchange: run at most once, on the cancelling thread,
  // which must not wait on the transport. False if the exchange was
  // cancelled since Launch: the canceller has run already, and the
  // transport must not send it (it ends it with CancelledOutcome()).
  [[nodiscard]] virtual bool SetCanceller(std::function<void()> canceller) = 0;
  // About to be handed to a connection (counts as sent). False if the
  // exchange was cancelled or ended meanwhile (while it waited for room,
  // say): the transport must not send it, and ends it with
  // CancelledOutcome().
  [[nodiscard]] virtual bool Sent(TimePoint now) = 0;
  // About to be written on a ready connection, once: the transport reads
  // the exchange's attempt fields right after. Whatever came before (the
  // client's queue, opening the connection) has passed.
  virtual void Writing() {}
  // The whole of a streamed request body written (or of a buffered one
  // too long to go with its head, Exchange::TimedUpload); the response's
  // headers; a 2xx body on its way to the sink.
  virtual void RequestBodySent(TimePoint now) = 0;
  // The request's headers were written, told only when its body's upload
  // is timed (Exchange::TimedUpload): a pipe's body
  // (Request::StreamBodyFromPipe) makes the exchange a stream from here;
  // a buffered one's upload begins.
  virtual void RequestHeadersSent(TimePoint now) = 0;
  virtual void HeadersArrived(TimePoint now) = 0;
  virtual void BodyStreaming(TimePoint now) = 0;
  // With several endpoints: the carrier chose `endpoint` for the exchange,
  // so an attempt that ends on its own (its timeout cancelled it) still
  // says where it went (AttemptOutcome::endpoint).
  virtual void Carried(std::shared_ptr<EndpointHealth> /*endpoint*/) {}
  // The exchange ended. The first end wins; false for a later one.
  virtual bool End(AttemptOutcome&& outcome) = 0;
  // How a cancelled exchange ends.
  virtual AttemptOutcome CancelledOutcome() const = 0;
  // Whether the exchange was cancelled or has ended. One the transport
  // holds unsent (its connection still opening) is then not sent: the
  // canceller's task, on its way, takes it out.
  virtual bool Cancelled() const { return false; }

 protected:
  ~ExchangeEvents() = default;
};

// One client's transport: carries that client's exchanges.
class ClientTransport {
 public:
  virtual ~ClientTransport() = default;
  // Carries one exchange, holding `events` until it ends it: exactly one
  // End, unless the exchange was cancelled first (its end is then the
  // canceller's side's).
  virtual void Start(std::shared_ptr<ExchangeEvents> events, const ExchangeRequest& exchange) = 0;
  // Opens a connection now, before an exchange needs it. `ready` runs once:
  // with nothing once a connection is usable (at once if one is), or with
  // why none could be opened by `deadline`.
  virtual void Warm(TimePoint deadline, std::function<void(Result<void>)> ready) = 0;
  // Latched: whether a connection of this transport has ever been usable.
  virtual bool Connected() const = 0;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_CLIENT_TRANSPORT_H_
