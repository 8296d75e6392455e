// SPDX-License-Identifier: Apache-2.0
// The pieces the client's call path is made of. A call goes through
//
//   OriginCheck -> CallMiddleware -> Redirects -> RetryLoop
//                                                    (CallLayer: one call)
//     -> AttemptSpan -> BreakerLayer -> AttemptMiddleware -> AttemptTimeout
//     -> Transport                                   (AttemptLayer: one attempt)
//
// each owning the next, assembled bottom to top in client.cc. Everything is
// asynchronous: a layer starts the layer below and is called back, on the
// transport's event-loop thread or on the clock's timer thread. Internal.
#ifndef OUTBOUND_SRC_HTTP_LAYERS_H_
#define OUTBOUND_SRC_HTTP_LAYERS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "client_telemetry.h"
#include "fault.h"
#include "origin.h"
#include "outbound/circuit/breaker.h"
#include "outbound/context.h"
#include "outbound/http/classify.h"
#include "outbound/http/message.h"
#include "outbound/http/middleware.h"
#include "outbound/http/settings.h"
#include "outbound/internal/timeout_list.h"
#include "outbound/random.h"
#include "outbound/retry/retrier.h"
#include "outbound/telemetry/telemetry.h"

namespace outbound::http::internal {

// Why an attempt was cut short.
enum class CutReason { kNone, kAttemptTimeout, kDeadline, kCancelled };

// What a call's deadline or its caller's cancellation interrupts: the
// request the call is on (its retry loop).
class Interruptible {
 public:
  virtual void Interrupt(CutReason reason) = 0;

 protected:
  ~Interruptible() = default;
};

// One request of a call: its method, absolute URL and headers, validated.
struct CallRequest {
  std::string method;
  std::string url;
  Headers headers;
  std::string body;
  bool replayable = true;
  // Set: the body is read from it as it is sent (Request::StreamBodyFrom),
  // and `body` is empty.
  BodySource body_source;
  // The call asked for a gzip answer (Settings::gzip): the transport
  // decodes a gzip-coded body.
  bool decode_gzip = false;
};

// How a call ended: a result, or the user's own exception.
struct CallOutcome {
  Result<Response> result = Fail(ErrorKind::kCancelled, "call not made");
  std::exception_ptr thrown;
};

class CallLayer;

// One call: what it shares across its attempts and redirects (its
// deadline, whether the caller gave up), and its way down the call layers
// and back, which works as an attempt's does (see Attempt): each layer that
// passes the call's request down enters itself, and the retry loop ends the
// request with `Complete`.
class CallState : public std::enable_shared_from_this<CallState> {
 public:
  CallState(TimePoint deadline, std::shared_ptr<outbound::internal::CancelState> cancel)
      : deadline_(deadline), caller_cancel_(std::move(cancel)) {}
  ~CallState();

  // Arms the deadline (on `deadlines`, which outlives the call) and the
  // caller's cancellation, once per call. The CallState must be owned by a
  // shared_ptr.
  void Arm(outbound::internal::TimeoutList& deadlines);
  // Who ends the call when either fires: interrupted once, with kDeadline
  // or kCancelled; at once if that already happened. Each request of the
  // call (a redirect is a new one) sets itself.
  void SetInterruptTarget(const std::weak_ptr<Interruptible>& target);
  // Disarms both, once the call is over.
  void Disarm();
  // Ends the call as if the caller cancelled it (the client is going away).
  void Cancel() { Interrupt(CutReason::kCancelled); }

  TimePoint deadline() const { return deadline_; }
  bool deadline_passed() const { return reason_.load() == CutReason::kDeadline; }
  // The list the call's deadline is armed on (null before Arm).
  outbound::internal::TimeoutList* deadlines() const { return deadlines_; }
  // While held, the call's deadline passing ends nothing: an attempt whose
  // body has a timer of its own (Request::WithBodyTimeout) holds it. A
  // deadline that passed meanwhile ends the call at the release. Hold is
  // false if the call is ending already. Thread-safe.
  bool HoldDeadline();
  void ReleaseDeadline();
  // Ends the call as its deadline passing would (a body timer ran out).
  void DeadlinePassed() { Interrupt(CutReason::kDeadline); }
  bool cancelled() const { return reason_.load() == CutReason::kCancelled; }
  // Attempts started so far by the whole call, redirects included.
  std::atomic<int> attempts{0};
  // Attempts handed to a connection so far: what Error::attempts reports.
  std::atomic<int> attempts_sent{0};

  // The fields below belong to the call's way through the layers: one
  // request at a time, so one thread at a time touches them.

  // The request the call is on; a redirect is a new one.
  std::shared_ptr<const CallRequest> request;
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
  // The streamed body's own bound, from its headers (WithBodyTimeout).
  std::optional<Duration> body_timeout;
  // Retry loop: an attempt was repeated at a middleware's request (once
  // per call).
  bool repeated = false;

  // The caller's trace context (invalid when none): each attempt's span is
  // its child. And the caller's baggage as a header value ("" when none).
  telemetry::SpanContext parent;
  std::string baggage;
  // AttemptSpan: when the caller gave no trace, the trace its first
  // attempt started, so every attempt of the call is in one trace.
  telemetry::SpanContext own_trace;

  // A layer passes the call's request down: its Finish will see the outcome.
  void Enter(CallLayer& layer);
  // Ends the call's request: each entered layer's Finish, the lowest first,
  // and unless one took the call on, `done`. Once per request.
  void Complete(CallOutcome&& outcome);

 private:
  static constexpr std::size_t kMaxLayers = 8;
  std::array<CallLayer*, kMaxLayers> entered_{};
  std::size_t depth_ = 0;

  void Interrupt(CutReason reason);

  struct DeadlineEntry final : outbound::internal::TimeoutList::Entry {
    explicit DeadlineEntry(CallState& c) : call(c) {}
    void Expired() override;
    CallState& call;
  };

  TimePoint deadline_;
  std::shared_ptr<outbound::internal::CancelState> caller_cancel_;
  std::atomic<CutReason> reason_{CutReason::kNone};
  std::mutex mu_;
  std::weak_ptr<Interruptible> interrupt_;
  bool deadline_held_ = false;    // guarded by mu_
  bool deadline_missed_ = false;  // guarded by mu_
  DeadlineEntry deadline_entry_{*this};
  outbound::internal::TimeoutList* deadlines_ = nullptr;
  std::atomic<bool> disarmed_{false};
  int cancel_id_ = -1;
};

// How one attempt ended, on its way up the layers.
struct AttemptOutcome {
  // Always replaced; short enough not to allocate.
  Result<Response> result = Fail(ErrorKind::kTransport, "no attempt");
  bool body_failed = false;                      // the error came after the headers
  bool rejected = false;                         // the breaker said no: nothing was sent
  std::optional<Classification> classification;  // set by the breaker layer
  std::exception_ptr thrown;                     // the user's classify or policy threw
  AttemptRecord record;                          // filled by the attempt span

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
  // With `unprocessed`: the stream was left out by its connection's
  // graceful end, a GOAWAY that kept earlier streams (a server rotating
  // connections, as nginx does after keepalive_requests).
  // That is no sign of load: it is sent again on a new connection without
  // spending TransparentRetries, a bounded number of times per request.
  bool connection_retired = false;
  // Set by the transport: part of the body went to the call's BodySink.
  // The attempt is then final, whatever classify says.
  bool body_streamed = false;
  // The transport knows that sending the request again cannot help (a TLS
  // protocol refusal, a malformed response): the attempt is not retried.
  bool cannot_improve = false;
  // Set by the breaker layer: another attempt already counted this
  // attempt's connection loss. It is retried at once, outside the budget
  // and MaxAttempts (a few times per request), if it is safe to repeat.
  bool collateral = false;
  // Set by the attempt middleware layer: a middleware asks for the request
  // to be sent once more at once (a refreshed credential).
  bool repeat_once = false;
};

// Who starts attempts and hears how each ended: the retry loop.
class AttemptOwner {
 public:
  virtual void AttemptEnded(AttemptOutcome&& outcome) = 0;

 protected:
  ~AttemptOwner() = default;
};

class AttemptLayer;
class Attempt;

// Told when an attempt has waited too long for its headers (the breaker
// layer's slow-call rule). Outlives the attempts it watches.
class SlowWatcher {
 public:
  // On the clock's thread, while the attempt is alive.
  virtual void Slow(Attempt& attempt) = 0;

 protected:
  ~SlowWatcher() = default;
};

// One attempt: one request sent; one response or error back.
//
// An attempt goes down the attempt layers and comes back up through the
// same ones, as a call stack would: each layer that passes it down enters
// itself (`Enter`), and whoever ends it (the transport, or a layer that
// refuses it) calls `Complete` once, which hands the outcome to each
// entered layer's `Finish`, the lowest first, then to its owner. The layers
// are shared by every attempt of the client; what one of them keeps for
// one attempt lives here, in the fields marked with its name. No step of
// the way allocates.
class Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  Attempt() = default;
  ~Attempt() {
    DisarmHeaderTimeout();
    DisarmSlowTimer();
    DisarmBodyTimer();
  }

  // What is sent, shared by every attempt of the request (not copied).
  std::shared_ptr<const CallRequest> request;
  int number = 1;        // within its request
  int resend_count = 0;  // within the whole call
  // The attempt repeats the one before at a middleware's request.
  bool repeat = false;
  // Its place in the transport's queue: 0 until a transport queues it. An
  // attempt sent again at once because the one before was left out
  // (unprocessed, or taken down with its connection) inherits its place,
  // so requests a connection's end sends back keep their turn ahead of
  // later ones (fair through connection rotations).
  std::uint64_t queue_place = 0;
  std::shared_ptr<CallState> call;
  // Who hears how the attempt ended, after the layers.
  std::shared_ptr<AttemptOwner> owner;

  // When the attempt started, on the client's clock: set by its owner as it
  // starts it; the layers on the way down take it as their "now".
  TimePoint started{};
  // BreakerLayer: the admission this attempt's result settles, and what
  // the breaker's policy threw when the slow-call rule settled it early.
  std::optional<circuit::Ticket> ticket;
  std::exception_ptr slow_thrown;
  // Asked by a transport before it sends an attempt that waited in its
  // queue: false when the breaker that admitted it has opened meanwhile, so
  // the attempt is failed as rejected and nothing is sent. Set by the
  // breaker layer; empty means always.
  std::function<bool()> still_admitted;
  // AttemptSpan: the attempt's span while it is recorded (null when tracing
  // is off), and the trace context headers the transport sends with it
  // (`traceparent`, `tracestate`, `baggage`), each in place of the request's
  // own header of that name.
  std::unique_ptr<telemetry::Span> span;
  Headers trace_headers;
  // The trace context this attempt runs in: its span's, or the caller's.
  const telemetry::SpanContext& trace_context() const {
    return span != nullptr ? span->context() : call->parent;
  }

  // A layer passes the attempt down: its Finish will see the outcome.
  void Enter(AttemptLayer& layer);
  // Ends the attempt: each entered layer's Finish, the lowest first, then
  // the owner's AttemptEnded. The first call wins, on any thread; a later
  // one (a transport ending an attempt that was cut meanwhile) does nothing
  // and returns false.
  bool Complete(AttemptOutcome&& outcome);

  // The transport has the attempt: every layer above has entered. From
  // here on a cut ends the attempt at once, on the thread that cuts it,
  // whatever the transport is doing, so a call's deadline answers its
  // caller even while its transport is busy or stuck. Returns false if the
  // attempt was cut before: the transport then sends nothing and ends it
  // with CutOutcome().
  [[nodiscard]] bool Launch();

  // The transport hands the attempt to a connection: it now counts as sent
  // (Error::attempts), and the header timeout starts. Time spent in the
  // client's own queue before this is not the dependency's.
  void HandedOver(TimePoint now);
  bool handed_over() const { return handed_over_.load(); }
  // The transport has sent the whole of a streamed request body
  // (Request::StreamBodyFrom): the header timeout and the slow-call timer,
  // which wait for it, start now. Thread-safe; once.
  void BodySent(TimePoint now);

  // Cutting short: the transport says how; layers above say when. Both
  // thread-safe; the canceller runs at most once, at Cut or at SetCanceller
  // if the attempt was cut already.
  void SetCanceller(std::function<void()> canceller);
  void Cut(CutReason reason);
  CutReason cut_reason() const { return cut_.load(); }
  // How an attempt cut for `cut_reason()` ends.
  AttemptOutcome CutOutcome() const;

  // AttemptTimeout: cuts the attempt `timeout` after it is handed over
  // unless its headers have arrived by then. `timeouts` outlives it.
  void SetHeaderTimeout(outbound::internal::TimeoutList& timeouts, Duration timeout);
  // The transport: the response's headers arrived. Disarms the header
  // timeout. Thread-safe.
  void HeadersArrived();
  bool headers_arrived() const { return headers_arrived_.load(); }
  // The attempt ended: the header timeout, if armed, is disarmed.
  void DisarmHeaderTimeout();

  // BreakerLayer: tells `watcher` if the headers have not arrived `after`
  // the attempt is handed over. The headers, the attempt's end and
  // DisarmSlowTimer disarm it; once DisarmSlowTimer returns, Slow is not
  // running and never will. `timeouts` and `watcher` outlive the attempt.
  void SetSlowTimer(outbound::internal::TimeoutList& timeouts, Duration after,
                    SlowWatcher& watcher);
  void DisarmSlowTimer();

  // The transport: the headers of the call's 2xx answer arrived and its
  // body goes to the call's sink. With a body timeout (WithBodyTimeout) the
  // body has that long from `now`, and the call's deadline waits until the
  // attempt ends. Thread-safe.
  void BodyStreaming(TimePoint now);

 private:
  void DisarmBodyTimer();
  // Room for every attempt layer a client has, with space to grow.
  static constexpr std::size_t kMaxLayers = 8;
  std::array<AttemptLayer*, kMaxLayers> entered_{};
  std::size_t depth_ = 0;

  struct HeaderTimeout final : outbound::internal::TimeoutList::Entry {
    explicit HeaderTimeout(Attempt& a) : attempt(a) {}
    void Expired() override;
    Attempt& attempt;
  };

  std::mutex mu_;
  std::atomic<CutReason> cut_{CutReason::kNone};
  std::atomic<bool> completed_{false};
  bool launched_ = false;  // guarded by mu_
  std::function<void()> canceller_;
  // Arms the header timeout and the slow-call timer; under mu_.
  void ArmHeaderTimers(TimePoint now);
  bool body_sent_ = false;  // guarded by mu_

  HeaderTimeout header_timeout_{*this};
  outbound::internal::TimeoutList* header_timeouts_ = nullptr;
  Duration header_timeout_length_{0};
  bool header_timeout_armed_ = false;  // guarded by mu_

  struct SlowTimer final : outbound::internal::TimeoutList::Entry {
    explicit SlowTimer(Attempt& a) : attempt(a) {}
    void Expired() override;
    Attempt& attempt;
  };
  SlowTimer slow_timer_{*this};
  outbound::internal::TimeoutList* slow_timeouts_ = nullptr;
  Duration slow_after_{0};
  SlowWatcher* slow_watcher_ = nullptr;
  bool slow_timer_armed_ = false;  // guarded by mu_
  std::atomic<bool> headers_arrived_{false};
  std::atomic<bool> handed_over_{false};

  struct BodyTimer final : outbound::internal::TimeoutList::Entry {
    explicit BodyTimer(Attempt& a) : attempt(a) {}
    void Expired() override;
    Attempt& attempt;
  };
  BodyTimer body_timer_{*this};
  outbound::internal::TimeoutList* body_timeouts_ = nullptr;
  bool body_timer_armed_ = false;  // guarded by mu_
  std::atomic<bool> body_timer_fired_{false};
};

// Either transport closes a pooled connection that has carried no call for
// this long.
inline constexpr auto kIdleConnectionLifetime = std::chrono::seconds(90);

class AttemptLayer {
 public:
  virtual ~AttemptLayer() = default;
  // Starts one attempt: does this layer's part, then either passes it down
  // (`attempt->Enter(*this)`, then the next layer's Start) or ends it here
  // (`attempt->Complete(...)`).
  virtual void Start(const std::shared_ptr<Attempt>& attempt) = 0;
  // The attempt this layer passed down has ended: this layer's part of its
  // outcome. Once per Enter, on any thread.
  virtual void Finish(Attempt& attempt, AttemptOutcome& outcome) = 0;
};

class CallLayer {
 public:
  virtual ~CallLayer() = default;
  // Sends the request the call is on (`call->request`): does this layer's
  // part, then either passes it down (`call->Enter(*this)`, then the next
  // layer's Send) or ends it here (`call->Complete(...)`).
  virtual void Send(const std::shared_ptr<CallState>& call) = 0;
  // The request this layer passed down has ended: this layer's part of its
  // outcome. Returns false if the layer took the call on instead (it sent
  // another request of it): the outcome then goes no further up.
  virtual bool Finish(CallState& call, CallOutcome& outcome) = 0;
};

// A transport whose pooled connections outlive attempts: told when the
// client has no call in flight, so it can close them once they have been
// idle long enough. Thread-safe.
class ConnectionPool {
 public:
  // `live_calls` counts the client's calls in flight; it outlives the pool.
  virtual void CountCallsWith(const std::atomic<int>& live_calls) = 0;
  // The client's last call ended at `since`.
  virtual void ClientIdle(TimePoint since) = 0;

 protected:
  ~ConnectionPool() = default;
};

// The layers, each in a file of its name. Bottom to top:

// Fails the attempt with kDeadline if its headers have not arrived within
// `timeout` of its start; the transport then abandons it. `clock` tells
// the time of the timeouts.
std::unique_ptr<AttemptLayer> MakeAttemptTimeout(std::unique_ptr<AttemptLayer> next, Clock& clock,
                                                 Duration timeout);

// Admits the attempt through the breaker or rejects it (nothing sent);
// classifies what came back (the client's own rules first, then
// `classify`) and settles the breaker's ticket with it.
std::unique_ptr<AttemptLayer> MakeBreakerLayer(std::unique_ptr<AttemptLayer> next,
                                               circuit::Breaker& breaker, Classify classify,
                                               Clock& clock, const ClientTelemetry& telemetry);

// Times each attempt and fills its record; records its span and metrics
// through `telemetry`, which outlives the layer.
std::unique_ptr<AttemptLayer> MakeAttemptSpan(std::unique_ptr<AttemptLayer> next, Clock& clock,
                                              const ClientTelemetry& telemetry);

// Retries of attempts the server did not process (a refused stream),
// earned by the client's answered attempts: each attempt that got a
// response earns one, up to kMax; each such retry spends one. While the
// dependency answers, a refusal of some streams costs no retry budget and
// no MaxAttempts; a dependency that refuses everything earns nothing, and
// its refusals fall to the retry budget like any retry. Thread-safe.
class TransparentRetries {
 public:
  static constexpr int kMax = 10;
  void Earn() {
    int now = tokens_.load(std::memory_order_relaxed);
    while (now < kMax && !tokens_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) {
    }
  }
  bool TrySpend() {
    int now = tokens_.load(std::memory_order_relaxed);
    while (now > 0 && !tokens_.compare_exchange_weak(now, now - 1, std::memory_order_relaxed)) {
    }
    return now > 0;
  }

 private:
  std::atomic<int> tokens_{0};
};

// The attempts of one request: retried while safe, allowed and worth it.
struct RetryLoopOptions {
  const retry::Retrier* retrier;
  Clock* clock;
  Random* random;
  // Told of every attempt's record as the loop decides what follows it.
  std::function<void(const AttemptRecord&)> on_attempt;
  const ClientTelemetry* telemetry;
  TransparentRetries* transparent = nullptr;  // the client's; outlives the loop
};
std::unique_ptr<CallLayer> MakeRetryLoop(std::unique_ptr<AttemptLayer> next,
                                         RetryLoopOptions options);

// Follows redirects within `origin`, up to 10, each a request of its own.
std::unique_ptr<CallLayer> MakeRedirects(std::unique_ptr<CallLayer> next, const Origin& origin);

// The user's call middleware, in order, above the redirects: each sees the
// call once. A request one changed is checked again against `origin`.
std::unique_ptr<CallLayer> MakeCallMiddleware(
    std::unique_ptr<CallLayer> next, const Origin& origin,
    std::vector<std::shared_ptr<CallMiddleware>> middleware);

// The user's attempt middleware, in order, below the breaker: each sees
// every admitted attempt. A request one changed is checked again, and one
// on another origin is refused.
std::unique_ptr<AttemptLayer> MakeAttemptMiddleware(
    std::unique_ptr<AttemptLayer> next, const Origin& origin,
    std::vector<std::shared_ptr<AttemptMiddleware>> middleware);

// Failure injection: aborts, delays or answers the attempts of calls whose
// scenario names this client (CallState::fault), below the attempt timeout.
std::unique_ptr<AttemptLayer> MakeFaultInjection(std::unique_ptr<AttemptLayer> next, Clock& clock,
                                                 Random& random);

// The outbound rate limit: one token per call, waited for on `clock`.
std::unique_ptr<CallLayer> MakeRateLimit(std::unique_ptr<CallLayer> next, Clock& clock,
                                         RateLimit limit);

// Whether a request may be sent twice: an idempotent method (RFC 9110) or an
// idempotency key, and a body that can be sent again.
bool SafeToRepeat(const CallRequest& request);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_LAYERS_H_
