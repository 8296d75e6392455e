// SPDX-License-Identifier: Apache-2.0
// One attempt on its way down the attempt layers and back (Attempt), the
// interface every attempt layer implements (AttemptLayer), and the
// client's list of them (AttemptPath).
//
// The list is the order. A layer hands the attempt on with
// `attempt.Proceed(*this)`, which starts the next layer in the list (the
// last one is the transport), or ends it with `attempt.End(outcome)`,
// which hands the outcome back up through every layer that proceeded, the
// lowest first, then to the attempt's owner (the retry loop).
//
// What a layer keeps for one attempt is its own: it declares a slot when
// the client is made (`AttemptSlots::Declare<T>()`), and finds it in each
// attempt (`attempt.slot(index)`). The attempt holds the slots and knows
// nothing of what is in them.
//
// The transport tells the attempt what happens to it (sent, the request
// body sent, the headers); the attempt tells each layer that proceeded
// and listens (`AttemptListener::Heard`), so the attempt timeout and the
// breaker's slow-call rule run their own timers without the transport
// knowing either. Internal.
#ifndef OUTBOUND_SRC_HTTP_ATTEMPT_H_
#define OUTBOUND_SRC_HTTP_ATTEMPT_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string_view>
#include <vector>

#include "call.h"
#include "client_transport.h"
#include "layer_list.h"
#include "outbound/http/classify.h"
#include "outbound/http/message.h"
#include "outbound/http/settings.h"
#include "outbound/internal/mutex.h"
#include "outbound/internal/timeout_list.h"
#include "outbound/telemetry/telemetry.h"

namespace outbound::http::internal {

// Who starts attempts and hears how each ended: the retry loop.
class AttemptOwner {
 public:
  // Decides what follows the attempt, into `outcome.record` (decision and
  // reason). The attempt span layer asks it before the span ends, so the
  // span carries the reason; Ended asks it if nobody did. Once per attempt.
  // An owner that decides nothing (a test's) leaves the record as it is.
  virtual void Decide(AttemptOutcome& outcome) { (void)outcome; }
  virtual void Ended(AttemptOutcome&& outcome) = 0;

 protected:
  ~AttemptOwner() = default;
};

// What the layers hear of an attempt from the transport, once each.
enum class AttemptEvent {
  // Handed to a connection: the attempt counts as sent. Time before it
  // was the client's own (its queue, a connection to wait for).
  kSent,
  // The dependency now owes the attempt its headers: it was handed to a
  // connection and its whole request body has gone (a streamed body may
  // take longer to send than any answer takes to come). Header timers
  // start here.
  kAwaitingHeaders,
  // A buffered request body too long for one write began to go, after
  // kAwaitingHeaders: the dependency owes nothing while it goes (a slow
  // link, a server that reads slowly), so header timers pause here
  // (AttemptTimer::Pause) ...
  kUploading,
  // ... and resume here, with what they had left: its last byte went.
  kUploaded,
  // The response's headers arrived. Header timers stop here.
  kHeaders,
};

// The per-attempt state the layers of a client declare: one block in each
// attempt, laid out once when the client is made. Not thread-safe while
// declaring (the client's constructor); read-only afterwards.
class AttemptSlots {
 public:
  template <typename T>
  struct Index {
    std::size_t offset;
  };

  // A slot of type T (default-constructible) in every attempt, made when
  // the attempt is and destroyed with it.
  template <typename T>
  Index<T> Declare() {
    static_assert(alignof(T) <= alignof(std::max_align_t));
    std::size_t offset = (size_ + alignof(T) - 1) / alignof(T) * alignof(T);
    size_ = offset + sizeof(T);
    kinds_.push_back(
        {offset, [](void* at) { new (at) T(); }, [](void* at) { static_cast<T*>(at)->~T(); }});
    return {offset};
  }

  std::size_t size() const { return size_; }
  void Make(std::byte* block) const;
  void Destroy(std::byte* block) const;

 private:
  struct Kind {
    std::size_t offset;
    void (*make)(void*);
    void (*destroy)(void*);
  };
  std::vector<Kind> kinds_;
  std::size_t size_ = 0;
};

class Attempt;
class AttemptPath;

class AttemptLayer {
 public:
  virtual ~AttemptLayer() = default;
  // The layer's name as the docs write the order ("attempt timeout").
  virtual std::string_view name() const = 0;
  // Whether the layer acts on attempts now. One that can be switched on
  // while calls go (fault injection) is always in the path and says false
  // while off: it passes each attempt on untouched, and the path's
  // description leaves it out.
  virtual bool active() const { return true; }
  // Starts one attempt: does this layer's part, then either hands it on
  // (`attempt.Proceed(*this)`) or ends it here (`attempt.End(...)`). A
  // layer that hands it on later holds it (`attempt.shared_from_this()`).
  virtual void Start(Attempt& attempt) = 0;
  // The attempt this layer handed on has ended: this layer's part of its
  // outcome. Once per Proceed, on any thread.
  virtual void Finish(Attempt& attempt, AttemptOutcome& outcome) = 0;
};

// A layer that hears what the transport says of the attempts it handed on
// implements this beside AttemptLayer (the attempt timeout, the breaker,
// the attempt span); the path tells only those.
class AttemptListener {
 public:
  // On the transport's thread. kSent and kAwaitingHeaders come under the
  // attempt's lock and never after the attempt ended: note a time or arm a
  // timer, no more. kHeaders comes without the lock, and may come after
  // Finish: disarm, no more.
  virtual void Heard(Attempt& attempt, AttemptEvent event, TimePoint now) = 0;

 protected:
  ~AttemptListener() = default;
};

// A layer that adds an attempt field whose value depends on the moment the
// attempt is written (gRPC's time left) implements this beside
// AttemptLayer; the path tells only those, and costs nothing without one.
class AttemptFieldWriter {
 public:
  // On the transport's thread, just before it writes the request: add to
  // `attempt.attempt_headers`, no more. Without the attempt's lock; it may
  // come after Finish (a cancel on another thread), when what it adds is
  // written to nobody.
  virtual void Writing(Attempt& attempt, TimePoint now) = 0;

 protected:
  ~AttemptFieldWriter() = default;
};

// A timer a layer keeps in its slot for one attempt: armed at most once,
// and once Disarm returns its expiry is not running and never will.
// Expiry runs on the clock's thread with the attempt alive.
class AttemptTimer final : outbound::internal::TimeoutList::Entry {
 public:
  using Fire = void (*)(Attempt& attempt, void* context);

  AttemptTimer() = default;
  ~AttemptTimer() override { Disarm(); }

  // Arms the timer on `list` for `at`, unless it was disarmed before.
  void Arm(outbound::internal::TimeoutList& list, TimePoint at, Attempt& attempt, Fire fire,
           void* context);
  void Disarm();
  // Stops the armed timer for a while (the time is not the dependency's),
  // keeping what it has left after `now`; nothing if it is expiring or
  // was disarmed. Not under the attempt's lock: it waits for an expiry
  // running on another thread, as Disarm does.
  void Pause(TimePoint now);
  // After Pause: arms the timer again for what it had left, from `now`.
  void Resume(TimePoint now);

 private:
  void Expired() override;

  outbound::internal::Mutex mu_;
  // Set under mu_, never cleared: a later Arm does nothing.
  bool disarmed_ = false;
  // Set once a Disarm has returned, any expiry over: a later one (the
  // attempt ends, or is destroyed) returns at once. A Disarm while another
  // still waits for the expiry waits too. One from within the expiry (it
  // ended the attempt) settles nothing: the expiry still runs.
  std::atomic<bool> settled_{false};
  std::atomic<bool> in_expiry_{false};
  // Guarded by mu_; set by the one Arm, so non-null once armed.
  outbound::internal::TimeoutList* list_ = nullptr;
  TimePoint at_{};       // guarded by mu_: when it expires, armed
  Duration left_{};      // guarded by mu_: what it had left, paused
  bool paused_ = false;  // guarded by mu_
  Attempt* attempt_ = nullptr;
  Fire fire_ = nullptr;
  void* context_ = nullptr;
};

// One attempt: one request sent; one response or error back. The
// transport sees it only as ExchangeEvents (client_transport.h).
class Attempt final : public ExchangeEvents, public std::enable_shared_from_this<Attempt> {
 public:
  // An attempt down `path`, with a slot for each layer that declared one,
  // on the client's `clock` (which outlives it): read as it ends, for
  // AttemptOutcome::ended.
  Attempt(const AttemptPath& path, Clock& clock);
  ~Attempt();
  // The exchange the transport is handed: pointers into this attempt.
  ExchangeRequest exchange();
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;

  // What is sent, shared by every attempt of the request (not copied).
  std::shared_ptr<const CallRequest> request;
  int number = 1;        // within its request
  int resend_count = 0;  // within the whole call
  // Of the call's attempts before this one, those the server may have
  // acted on: not one it refused unprocessed, never sent, or turned away
  // by the breaker (gRPC's grpc-previous-rpc-attempts, gRFC A6).
  int previous_attempts = 0;
  // The attempt repeats the one before at a middleware's request.
  bool repeat = false;
  // A hedge: started beside another attempt still in flight (Hedging).
  bool hedge = false;
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
  // Set by the breaker layer: asked by the transport before it sends an
  // attempt that waited in its queue. Null means always admitted.
  const Admission* admission = nullptr;
  // The attempt's span while it is recorded (null when tracing is off).
  std::unique_ptr<telemetry::Span> span;
  // Headers of this attempt's own, each sent in place of the request's
  // header of that name: the trace context (`traceparent`, `tracestate`,
  // `baggage`, set by the attempt span layer) and a front end's (gRPC's
  // `grpc-timeout`, the time the attempt has left).
  AttemptFields attempt_headers;
  // The trace context this attempt runs in: its span's, or the caller's.
  const telemetry::SpanContext& trace_context() const {
    return span != nullptr ? span->context() : call->parent;
  }

  // A layer's slot in this attempt.
  template <typename T>
  T& slot(AttemptSlots::Index<T> index) {
    return *std::launder(reinterpret_cast<T*>(slots_ + index.offset));
  }

  // Starts the attempt at the path's first layer. Once. The layers are
  // handed the attempt by reference: whoever calls Begin or Proceed holds
  // a shared_ptr to it until the call returns (the retry loop's InFlight,
  // the fault delay's timer).
  void Begin();
  // The layer now running hands the attempt to the next one in the path.
  // Once per layer; a layer that is not the one running is a bug (see
  // AttemptPath).
  void Proceed(AttemptLayer& from);
  // Ends the attempt: each layer that proceeded hears it in its Finish,
  // the lowest first, then the owner. The first end wins, on any thread; a
  // later one (a transport ending an attempt that was cancelled meanwhile)
  // does nothing and returns false.
  bool End(AttemptOutcome&& outcome) override;

  // The transport has the attempt: every layer above has proceeded. From
  // here on a cancellation ends the attempt at once, on the thread that
  // cancels it, whatever the transport is doing, so a call's deadline
  // answers its caller even while its transport is busy or stuck. Returns
  // false if the attempt was cancelled before: the transport then sends
  // nothing and ends it with CancelledOutcome().
  [[nodiscard]] bool Launch() override;

  // The transport's news, each once; thread-safe. Sent: the attempt is
  // handed to a connection and counts as sent (Error::attempts); time in
  // the client's own queue before it is not the dependency's.
  bool Sent(TimePoint now) override;
  bool Cancelled() const override { return ended_.load() || cancel_.load() != CancelReason::kNone; }
  bool sent() const { return sent_.load(); }
  // The whole of a streamed request body (Request::StreamBodyFrom) went:
  // header timers start (a pipe's body is a stream's: its end starts
  // none). Or a buffered one's, told by RequestHeadersSent: they resume.
  void RequestBodySent(TimePoint now) override;
  // A pipe's request headers went: the attempt is a stream from here. The
  // call's deadline is held (Settings::timeout, WithTimeout no longer end
  // it) and only the Context's deadline, on the body timer, does. A
  // buffered body's (told only of one too long for one write): it goes
  // now, and the layers hear kUploading.
  void RequestHeadersSent(TimePoint now) override;
  // About to be written on a connection: the field writers add theirs.
  // Once; a second call does nothing.
  void Writing() override;
  // When the dependency began to owe the attempt its headers (kAwaitingHeaders,
  // where the attempt timeout starts), if it has yet. Thread-safe.
  std::optional<TimePoint> awaiting_since() const {
    std::lock_guard lock(mu_);
    return awaiting_since_;
  }
  // The response's headers arrived.
  void HeadersArrived(TimePoint now) override;
  bool headers_arrived() const { return headers_arrived_.load(); }
  // The headers of the call's 2xx answer arrived and its body goes to the
  // call's sink. With a body timeout (WithBodyTimeout) the body has that
  // long from `now`, and the call's deadline waits until the attempt ends.
  void BodyStreaming(TimePoint now) override;
  void Carried(std::shared_ptr<EndpointHealth> endpoint) override;

  // Cancelling: the transport says how; layers above say when. Both
  // thread-safe; the canceller runs at most once, at Cancel or at
  // SetCanceller if the attempt was cancelled already (which then says
  // false).
  [[nodiscard]] bool SetCanceller(std::function<void()> canceller) override;
  void Cancel(CancelReason reason);
  CancelReason cancel_reason() const { return cancel_.load(); }
  // How an attempt cancelled for `cancel_reason()` ends. The attempt
  // timeout's length, for its message, when it is the reason.
  AttemptOutcome CancelledOutcome() const override;
  // Set by the attempt timeout layer, for CancelledOutcome's message.
  Duration attempt_timeout{0};

 private:
  // Tells each layer that proceeded.
  void Tell(AttemptEvent event, TimePoint now);
  void DisarmBodyTimer();

  const AttemptPath& path_;
  Clock& clock_;
  std::size_t depth_ = 0;  // layers that proceeded; the one running is at depth_
  // The same, as the events and End read it, on any thread (a delayed
  // fault proceeds on the clock's thread while a cancellation ends it).
  std::atomic<std::size_t> proceeded_{0};

  mutable outbound::internal::Mutex mu_;
  std::atomic<CancelReason> cancel_{CancelReason::kNone};
  std::atomic<bool> ended_{false};
  bool launched_ = false;                     // guarded by mu_
  std::shared_ptr<EndpointHealth> endpoint_;  // guarded by mu_: Carried
  std::function<void()> canceller_;
  bool body_sent_ = false;  // guarded by mu_
  bool uploading_ = false;  // guarded by mu_: kUploading was told, kUploaded not yet
  // When kAwaitingHeaders was told; guarded by mu_ (see awaiting_since()).
  std::optional<TimePoint> awaiting_since_;
  std::atomic<bool> written_{false};  // Writing was called (only the transport calls it)
  std::atomic<bool> headers_arrived_{false};
  std::atomic<bool> sent_{false};

  struct BodyTimer final : outbound::internal::TimeoutList::Entry {
    explicit BodyTimer(Attempt& a) : attempt(a) {}
    void Expired() override;
    Attempt& attempt;
  };
  BodyTimer body_timer_{*this};
  outbound::internal::TimeoutList* body_timeouts_ = nullptr;
  bool body_timer_armed_ = false;       // guarded by mu_
  std::atomic<bool> streaming_{false};  // the body timer is a stream's (the Context's deadline)
  std::atomic<bool> body_timer_fired_{false};

  // The layers' slots: inline when they fit, as they do for the client's
  // own layers.
  static constexpr std::size_t kInlineSlotBytes = 320;
  alignas(std::max_align_t) std::byte inline_slots_[kInlineSlotBytes];
  std::unique_ptr<std::byte[]> heap_slots_;
  std::byte* slots_;
};

// The slot layout, a base of AttemptPath declared before its layers, so it
// outlives them: a transport destroyed with the layers may let go of the
// last attempts, whose slots are then destroyed by this layout. It counts
// the attempts alive and waits, when it goes, for the last of them: one
// may be let go on another thread (a deadline's expiry on the clock's)
// while the client is being destroyed.
struct AttemptSlotLayout {
  explicit AttemptSlotLayout(AttemptSlots s) : slots(std::move(s)) {}
  ~AttemptSlotLayout() {
    std::unique_lock lock(attempts_mu);
    no_attempts.wait(lock, [this] { return attempts.load() == 0; });
  }
  AttemptSlotLayout(const AttemptSlotLayout&) = delete;
  AttemptSlotLayout& operator=(const AttemptSlotLayout&) = delete;

  AttemptSlots slots;
  mutable std::mutex attempts_mu;
  mutable std::condition_variable no_attempts;
  // Counted without the lock; only the step to zero is taken under it.
  mutable std::atomic<int> attempts{0};
};

// The attempt layers of one client, top to bottom, the transport last:
// the order is this list. A layer that breaks the protocol (proceeding
// when it is not the one running, or past the transport) is a bug: a
// debug build stops on it; a release build reports it to `misused` and
// ends the attempt with kLocalResource (not the dependency's failure: the
// breaker does not count it and it is not retried).
class AttemptPath final : private AttemptSlotLayout, public LayerList<AttemptLayer> {
 public:
  AttemptPath(AttemptSlots slots, std::vector<std::unique_ptr<AttemptLayer>> layers,
              std::function<void(std::string_view what)> misused);

  const AttemptSlots& slots() const { return AttemptSlotLayout::slots; }
  // The layers that are AttemptListeners, with their place in the list,
  // top to bottom.
  struct Listener {
    std::size_t depth;
    AttemptListener* listener;
  };
  const std::vector<Listener>& listeners() const { return listeners_; }
  // The layers that are AttemptFieldWriters, likewise.
  struct FieldWriter {
    std::size_t depth;
    AttemptFieldWriter* writer;
  };
  const std::vector<FieldWriter>& field_writers() const { return field_writers_; }
  // An attempt on this path was made; and has gone, the last it touches of
  // the path (notified under the lock, so the path may go at once after).
  void AttemptMade() const { attempts.fetch_add(1, std::memory_order_relaxed); }
  void AttemptGone() const {
    // Above one, the count cannot reach zero here: no lock. The last one
    // steps to zero under the lock, as the path's destructor checks it.
    int n = attempts.load(std::memory_order_relaxed);
    while (n > 1) {
      if (attempts.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) return;
    }
    std::lock_guard lock(attempts_mu);
    if (attempts.fetch_sub(1, std::memory_order_acq_rel) == 1) no_attempts.notify_all();
  }
  void Misused(std::string_view what) const;

 private:
  std::vector<Listener> listeners_;
  std::vector<FieldWriter> field_writers_;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_ATTEMPT_H_
