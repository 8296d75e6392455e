// SPDX-License-Identifier: Apache-2.0
// One call on its way down the call layers and back (CallState), the
// interface every call layer implements (CallLayer), and the client's list
// of them (CallPath). The list is the order: a layer hands the call on with
// `call.Proceed(*this)`, which starts the next layer in the list, and ends
// it with `call.End(outcome)`, which hands the outcome back up through
// every layer that proceeded, the lowest first. Internal.
#ifndef OUTBOUND_SRC_HTTP_CALL_H_
#define OUTBOUND_SRC_HTTP_CALL_H_

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fault.h"
#include "layer_list.h"
#include "outbound/context.h"
#include "outbound/http/message.h"
#include "outbound/internal/mutex.h"
#include "outbound/internal/timeout_list.h"
#include "outbound/telemetry/telemetry.h"
#include "routes.h"

namespace outbound::http::internal {

// Why an attempt or a call was cancelled: one verb, "cancel", for every
// way of stopping one; this says who asked.
// kHedgeWon: another attempt of the request answered first (hedging).
enum class CancelReason {
  kNone,
  kAttemptTimeout,
  kDeadline,
  kCancelled,
  kClientDestroyed,
  kHedgeWon
};

// The message a call or attempt stopped by `reason` (kCancelled or
// kClientDestroyed) ends with.
inline const char* CancelledMessage(CancelReason reason) {
  return reason == CancelReason::kClientDestroyed ? "the client was destroyed before the call ended"
                                                  : "the caller cancelled the call";
}

// What a call's deadline or its caller's cancellation stops: the request
// the call is on (its retry loop, or a rate limit's wait).
class Cancellable {
 public:
  virtual void Cancel(CancelReason reason) = 0;

 protected:
  ~Cancellable() = default;
};

// One request of a call: its method, absolute URL and headers, validated.
struct CallRequest {
  std::string method;
  std::string url;
  Headers headers;
  std::string body;
  bool replayable = true;
  // Whether the request may reach the server twice, when its front end
  // knows (a gRPC method declared idempotent or not); unset: HTTP's rule,
  // the method or an idempotency key (Idempotent).
  std::optional<bool> idempotent;
  // Set: the body is read from it as it is sent (Request::StreamBodyFrom),
  // and `body` is empty.
  BodySource body_source;
  // The call asked for a gzip answer (Settings::gzip): the transport
  // decodes a gzip-coded body.
  bool decode_gzip = false;
  // The request names no User-Agent: the transport sends kDefaultUserAgent
  // after `headers` (so a request with no header of its own needs no room
  // for one).
  bool default_user_agent = false;
};

// How a call ended: a result, or the user's own exception.
struct CallOutcome {
  // Made in place, short enough not to allocate.
  Result<Response> result{tl::unexpect, Error(ErrorKind::kCancelled, "call not made")};
  std::exception_ptr thrown;
};

// How a call that was waiting in a call layer (`waiting_for`: "the rate limit",
// "the bulkhead") ends when its caller cancels or its deadline passes.
CallOutcome StoppedWaiting(CancelReason reason, std::string_view waiting_for);

class CallLayer;
class CallPath;

// One call: what it shares across its attempts and redirects (its
// deadline, whether the caller gave up), and its way down the call path.
class CallState : public std::enable_shared_from_this<CallState> {
 public:
  CallState(TimePoint deadline, std::shared_ptr<outbound::internal::CancelState> cancel)
      : deadline_(deadline), caller_cancel_(std::move(cancel)) {}
  ~CallState();

  // Arms the deadline (on `deadlines`, which outlives the call) and the
  // caller's cancellation, once per call. The CallState must be owned by a
  // shared_ptr.
  void Arm(outbound::internal::TimeoutList& deadlines);
  // Who is cancelled when either fires: once, with kDeadline or
  // kCancelled; at once if that already happened. Each request of the call
  // (a redirect is a new one) sets itself.
  void SetCancelTarget(const std::weak_ptr<Cancellable>& target);
  // Disarms both, once the call is over.
  void Disarm();
  // Ends the call as a cancel does, for the client is going away.
  void ClientDestroyed() { Stop(CancelReason::kClientDestroyed); }

  TimePoint deadline() const { return deadline_; }
  bool deadline_passed() const { return reason_.load() == CancelReason::kDeadline; }
  // The list the call's deadline is armed on (null before Arm).
  outbound::internal::TimeoutList* deadlines() const { return deadlines_; }
  // While held, the call's deadline passing ends nothing: an attempt whose
  // body has a timer of its own (Request::WithBodyTimeout) holds it. A
  // deadline that passed meanwhile ends the call at the release. Hold is
  // false if the call is ending already. Thread-safe.
  bool HoldDeadline();
  void ReleaseDeadline();
  // Ends the call as its deadline passing would (a body timer ran out).
  void DeadlinePassed() { Stop(CancelReason::kDeadline); }
  bool cancelled() const {
    CancelReason reason = reason_.load();
    return reason == CancelReason::kCancelled || reason == CancelReason::kClientDestroyed;
  }
  // Whether this thread is stopping a call now (a cancel, a deadline, the
  // client going): a call that ends inside it tells its caller later, from
  // the loop's queue, for the stop may have come from the caller's own
  // code on the loop (a callback of another call, a stream's message),
  // which may hold a lock the callback takes.
  static bool Stopping();
  // Attempts started so far by the whole call, redirects included.
  std::atomic<int> attempts{0};
  // Of those, the ones the server did not act on: refused unprocessed,
  // never sent, or turned away by the breaker (Attempt::previous_attempts
  // leaves them out).
  std::atomic<int> unprocessed_attempts{0};
  // Attempts handed to a connection so far: what Error::attempts reports.
  std::atomic<int> attempts_sent{0};
  // Of those, hedges (Settings::hedging): sent beside an attempt still in
  // flight, not after one failed.
  std::atomic<int> hedges_sent{0};
  // Of those, the ones a connection the server retired left out (a
  // GOAWAY's, or one that opened busy): sent again at once, no failure.
  std::atomic<int> retired_resends{0};
  // An attempt was the request a server met as it failed a connection
  // (AttemptOutcome::met_connection_failure): a second is taken for the
  // cause (the classify layer).
  std::atomic<bool> met_connection_failure{false};
  // With several endpoints: the one the latest attempt was sent to
  // (EndpointHealth::id), for the next, or a hedge, to avoid; 0 for none.
  std::atomic<std::uint64_t> last_endpoint{0};

  // The fields below belong to the call's way through the layers: one
  // request at a time, so one thread at a time touches them.

  // The request the call is on; a redirect is a new one.
  std::shared_ptr<const CallRequest> request;
  // The policy the call runs under (Settings::routes): set by the client
  // before the call begins, from the path it was sent to, and kept through
  // redirects; the client's routes outlive it.
  const CallPolicy* policy = nullptr;
  // Who hears how the call ended, after the layers: the client.
  std::function<void(CallOutcome&&)> done;
  // Redirects: the redirects followed so far.
  int redirects = 0;
  // The fault the call's scenario injects into this client's attempts
  // (only read when the client's faults are on).
  std::optional<InjectedFault> fault;
  // Where the body of the call's 2xx answer goes as it arrives (empty: into
  // Response::body). Called by the transport, on its loop thread only.
  BodySink body_sink;
  // With body_sink: hears the head of the answer whose body streams, first
  // (Request::OnBodyHead). Called by the transport, on its loop thread only.
  BodyHeadSink body_head;
  // With body_sink: the read-side flow control its reader drives
  // (Request::StreamBodyTo(sink, window)).
  std::shared_ptr<ReceiveWindow> receive_window;
  // The streamed body's own bound, from its headers (WithBodyTimeout).
  std::optional<Duration> body_timeout;
  // The caller's Context deadline: a stream's only bound once its request
  // headers are written (Request::StreamBodyFromPipe).
  std::optional<TimePoint> context_deadline;
  // Retry loop: an attempt was repeated at a middleware's request (once
  // per call).
  bool repeated = false;
  // Adaptive concurrency: when the call passed the limit (its latency
  // sample starts there), and in which of the layer's epochs.
  TimePoint admitted_at{};
  std::uint32_t admitted_epoch = 0;

  // The caller's trace context (invalid when none): each attempt's span is
  // its child. And the caller's baggage as a header value ("" when none).
  telemetry::SpanContext parent;
  std::string baggage;
  // AttemptSpan: when the caller gave no trace, the trace its first
  // attempt started, so every attempt of the call is in one trace.
  telemetry::SpanContext own_trace;

  // Starts the call down `path`, at its first layer. Once per call. The
  // layers are handed the call by reference: whoever calls Begin or Proceed
  // holds a shared_ptr to it until the call returns (the client's Send, a
  // bulkhead's queue entry, a rate-limit waiter, the retry loop).
  void Begin(const CallPath& path);
  // The layer now running hands the call's request to the next layer. A
  // layer may proceed once for each time it was started (a redirect is a
  // new request: the redirects layer proceeds again from its Finish).
  void Proceed(CallLayer& from);
  // Ends the call's request: each layer that proceeded hears it in its
  // Finish, the lowest first, and unless one took the call on, `done`.
  void End(CallOutcome&& outcome);

 private:
  void Stop(CancelReason reason);

  struct DeadlineEntry final : outbound::internal::TimeoutList::Entry {
    explicit DeadlineEntry(CallState& c) : call(c) {}
    void Expired() override;
    CallState& call;
  };

  const CallPath* path_ = nullptr;
  std::size_t depth_ = 0;   // layers that proceeded; the one running is path_[depth_]
  bool in_flight_ = false;  // between Begin or Proceed and End

  TimePoint deadline_;
  std::shared_ptr<outbound::internal::CancelState> caller_cancel_;
  std::atomic<CancelReason> reason_{CancelReason::kNone};
  outbound::internal::Mutex mu_;
  std::weak_ptr<Cancellable> cancel_target_;
  bool deadline_held_ = false;    // guarded by mu_
  bool deadline_missed_ = false;  // guarded by mu_
  DeadlineEntry deadline_entry_{*this};
  outbound::internal::TimeoutList* deadlines_ = nullptr;
  std::atomic<bool> disarmed_{false};
  int cancel_id_ = -1;
};

class CallLayer {
 public:
  virtual ~CallLayer() = default;
  // The layer's name as the docs write the order ("retry loop").
  virtual std::string_view name() const = 0;
  // Whether the layer acts on calls now. One that can be switched on while
  // calls go (the rate limit) is always in the path and says false while
  // off: it passes each call on untouched, and the path's description
  // leaves it out.
  virtual bool active() const { return true; }
  // Sends the request the call is on (`call.request`): does this layer's
  // part, then either hands it on (`call.Proceed(*this)`) or ends it here
  // (`call.End(...)`). A layer that hands it on later holds it
  // (`call.shared_from_this()`).
  virtual void Send(CallState& call) = 0;
  // The request this layer handed on has ended: this layer's part of its
  // outcome. Returns false if the layer took the call on instead (it sent
  // another request of it): the outcome then goes no further up.
  virtual bool Finish(CallState& call, CallOutcome& outcome) = 0;
};

// The call layers of one client, top to bottom: the order is this list.
// A layer that breaks the protocol is a bug: a debug build stops on it; a
// release build reports it to `misused`, and then a call handed on by a
// layer that was not running ends with kLocalResource, while a call ended
// twice keeps its first end.
class CallPath final : public LayerList<CallLayer> {
 public:
  using LayerList::LayerList;
  void Misused(std::string_view what) const;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_CALL_H_
