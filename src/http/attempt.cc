// SPDX-License-Identifier: Apache-2.0
#include "attempt.h"

#include <cassert>
#include <string>
#include <utility>

namespace outbound::http::internal {

void AttemptSlots::Make(std::byte* block) const {
  for (const Kind& kind : kinds_) kind.make(block + kind.offset);
}

void AttemptSlots::Destroy(std::byte* block) const {
  for (auto kind = kinds_.rbegin(); kind != kinds_.rend(); ++kind) {
    kind->destroy(block + kind->offset);
  }
}

void AttemptTimer::Arm(outbound::internal::TimeoutList& list, TimePoint at, Attempt& attempt,
                       Fire fire, void* context) {
  std::lock_guard lock(mu_);
  if (list_ != nullptr || disarmed_) return;  // armed once at most
  list_ = &list;
  attempt_ = &attempt;
  fire_ = fire;
  context_ = context;
  at_ = at;
  list.Arm(*this, at);
}

void AttemptTimer::Pause(TimePoint now) {
  outbound::internal::TimeoutList* list;
  {
    std::lock_guard lock(mu_);
    if (list_ == nullptr || disarmed_ || paused_) return;
    list = list_;
  }
  // Not linked any more: it has expired, or is expiring (the attempt is
  // being cut), or a Disarm took it out.
  if (!list->Cancel(*this)) return;
  std::lock_guard lock(mu_);
  left_ = std::max(at_ - now, Duration::zero());
  paused_ = true;
}

void AttemptTimer::Resume(TimePoint now) {
  std::lock_guard lock(mu_);
  if (!std::exchange(paused_, false) || disarmed_) return;
  at_ = AddSaturated(now, left_);
  list_->Arm(*this, at_);
}

void AttemptTimer::Disarm() {
  if (settled_.load(std::memory_order_acquire)) return;
  outbound::internal::TimeoutList* list;
  {
    std::lock_guard lock(mu_);
    disarmed_ = true;
    list = list_;
  }
  // Outside the lock: Cancel waits for an expiry running on another
  // thread, and that expiry may take the attempt's lock (Cancel). Each
  // Disarm that comes before the first has returned waits so: the layer
  // calling it may go on to what the expiry touches (the breaker's ticket).
  if (list != nullptr) list->Cancel(*this);
  if (!in_expiry_.load(std::memory_order_acquire)) settled_.store(true, std::memory_order_release);
}

void AttemptTimer::Expired() {
  // Null when the attempt is being destroyed on another thread (which
  // waits for this to return).
  if (auto live = attempt_->weak_from_this().lock()) {
    in_expiry_.store(true, std::memory_order_relaxed);
    fire_(*live, context_);
    in_expiry_.store(false, std::memory_order_release);
  }
}

Attempt::Attempt(const AttemptPath& path, Clock& clock) : path_(path), clock_(clock) {
  std::size_t bytes = path.slots().size();
  if (bytes <= kInlineSlotBytes) {
    slots_ = inline_slots_;
  } else {
    heap_slots_ = std::make_unique<std::byte[]>(bytes);
    slots_ = heap_slots_.get();
  }
  path.slots().Make(slots_);
  path.AttemptMade();
}

Attempt::~Attempt() {
  // The layers' timers first: their expiries may be running.
  path_.slots().Destroy(slots_);
  // No other thread holds the attempt now, so its lock guards nothing.
  if (body_timer_armed_) DisarmBodyTimer();
  path_.AttemptGone();
}

void Attempt::Begin() {
  assert(!weak_from_this().expired() && "the caller holds the attempt while it runs");
  depth_ = 0;
  path_.at(0).Start(*this);
}

void Attempt::Proceed(AttemptLayer& from) {
  if (depth_ + 1 >= path_.size() || &path_.at(depth_) != &from) {
    std::string what = std::string(from.name()) +
                       " handed on an attempt it was not running, or past the transport";
    path_.Misused(what);
    AttemptOutcome outcome;
    outcome.result = Fail(ErrorKind::kLocalResource, "internal error: " + what);
    End(std::move(outcome));
    return;
  }
  assert(!weak_from_this().expired() && "the caller holds the attempt while it runs");
  ++depth_;
  proceeded_ = depth_;
  path_.at(depth_).Start(*this);
}

bool Attempt::End(AttemptOutcome&& outcome) {
  if (ended_.exchange(true)) return false;
  // Read once for every layer and the owner, unless the transport knows
  // when the end came (an answer's last bytes).
  if (outcome.ended == TimePoint{}) outcome.ended = clock_.Now();
  // Under the attempt's lock: no event is being told now, and none will
  // be. The call's deadline holds again.
  DisarmBodyTimer();
  for (std::size_t i = proceeded_.load(); i > 0; --i) path_.at(i - 1).Finish(*this, outcome);
  std::shared_ptr<AttemptOwner> to = std::move(owner);
  to->Ended(std::move(outcome));
  return true;
}

ExchangeRequest Attempt::exchange() {
  return {.request = request.get(),
          .attempt_headers = &attempt_headers,
          .body_sink = call->body_sink ? &call->body_sink : nullptr,
          .body_head = call->body_head ? &call->body_head : nullptr,
          .receive_window = call->receive_window.get(),
          .queue_place = &queue_place,
          .admission = admission,
          .call_endpoint = &call->last_endpoint};
}

bool Attempt::Launch() {
  std::lock_guard lock(mu_);
  launched_ = true;
  return cancel_.load() == CancelReason::kNone;
}

void Attempt::Tell(AttemptEvent event, TimePoint now) {
  std::size_t proceeded = proceeded_.load();
  for (const AttemptPath::Listener& heard : path_.listeners()) {
    if (heard.depth >= proceeded) return;
    heard.listener->Heard(*this, event, now);
  }
}

bool Attempt::Sent(TimePoint now) {
  std::lock_guard lock(mu_);
  if (ended_.load() || cancel_.load() != CancelReason::kNone) return false;
  // Once: failure injection hands a delayed attempt over before the
  // transport does.
  if (sent_.exchange(true)) return true;
  call->attempts_sent.fetch_add(1, std::memory_order_relaxed);
  if (hedge) call->hedges_sent.fetch_add(1, std::memory_order_relaxed);
  Tell(AttemptEvent::kSent, now);
  if (headers_arrived_.load()) return true;
  // A streamed body may take longer to send than any answer takes to come
  // (a 1 GiB upload): the wait for the headers starts once it has gone.
  if (request->body_source && !body_sent_) return true;  // RequestBodySent tells it
  awaiting_since_ = now;
  Tell(AttemptEvent::kAwaitingHeaders, now);
  return true;
}

void Attempt::RequestBodySent(TimePoint now) {
  std::lock_guard lock(mu_);
  if (body_sent_) return;
  body_sent_ = true;
  if (std::exchange(uploading_, false)) {
    if (!ended_.load() && cancel_.load() == CancelReason::kNone && !headers_arrived_.load()) {
      Tell(AttemptEvent::kUploaded, now);
    }
    return;
  }
  if (request->body_source.pipe) return;  // a stream's: no header timer
  if (!sent_.load() || ended_.load() || cancel_.load() != CancelReason::kNone ||
      headers_arrived_.load() || awaiting_since_) {
    return;
  }
  awaiting_since_ = now;
  Tell(AttemptEvent::kAwaitingHeaders, now);
}

void Attempt::Writing() {
  if (written_.exchange(true) || path_.field_writers().empty()) return;
  std::size_t proceeded = proceeded_.load();
  TimePoint now = clock_.Now();
  for (const AttemptPath::FieldWriter& heard : path_.field_writers()) {
    if (heard.depth >= proceeded) return;
    heard.writer->Writing(*this, now);
  }
}

void Attempt::HeadersArrived(TimePoint now) {
  if (headers_arrived_.exchange(true)) return;
  // Not under mu_: a layer stops its timers here, and stopping one waits
  // for an expiry that may be cancelling this attempt (which takes mu_).
  // A layer may hear this after its Finish: stopping twice is harmless.
  Tell(AttemptEvent::kHeaders, now);
}

bool Attempt::SetCanceller(std::function<void()> canceller) {
  std::unique_lock lock(mu_);
  if (cancel_.load() != CancelReason::kNone) {
    lock.unlock();
    canceller();
    return false;
  }
  canceller_ = std::move(canceller);
  return true;
}

void Attempt::Cancel(CancelReason reason) {
  std::function<void()> canceller;
  bool launched;
  std::shared_ptr<EndpointHealth> endpoint;
  {
    std::lock_guard lock(mu_);
    CancelReason expected = CancelReason::kNone;
    if (!cancel_.compare_exchange_strong(expected, reason)) return;
    canceller = std::move(canceller_);
    launched = launched_;
    endpoint = endpoint_;
  }
  // The transport lets go of the attempt on its own thread, when it can;
  // the layers above hear of the cancellation now.
  if (canceller) canceller();
  if (!launched) return;
  AttemptOutcome outcome = CancelledOutcome();
  outcome.endpoint = std::move(endpoint);
  End(std::move(outcome));
}

void Attempt::Carried(std::shared_ptr<EndpointHealth> endpoint) {
  std::lock_guard lock(mu_);
  endpoint_ = std::move(endpoint);
}

AttemptOutcome Attempt::CancelledOutcome() const {
  auto ms = [](Duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  AttemptOutcome outcome;
  outcome.body_failed = headers_arrived_.load();
  switch (cancel_.load()) {
    case CancelReason::kCancelled:
    case CancelReason::kClientDestroyed:
      outcome.result = Fail(ErrorKind::kCancelled, CancelledMessage(cancel_.load()));
      break;
    case CancelReason::kHedgeWon:
      outcome.result = Fail(ErrorKind::kCancelled, "another attempt of the request answered first");
      break;
    case CancelReason::kAttemptTimeout:
      // Never written: its connection was still opening (a dial or a
      // handshake unanswered), which is not the server being slow.
      outcome.result = Fail(ErrorKind::kDeadline,
                            written_.load() ? "no response headers within the attempt timeout (" +
                                                  ms(attempt_timeout) + "ms)"
                                            : "no connection was ready for the request within the "
                                              "attempt timeout (" +
                                                  ms(attempt_timeout) + "ms): nothing was sent");
      break;
    default:
      // A stream's timer is the Context's deadline: the call's own.
      if (body_timer_fired_.load() && !streaming_.load()) {
        outcome.result =
            Fail(ErrorKind::kDeadline, "the body did not end within its body timeout (" +
                                           ms(*call->body_timeout) + "ms)");
      } else {
        outcome.result = Fail(ErrorKind::kDeadline, "the call's deadline passed");
      }
      break;
  }
  return outcome;
}

void Attempt::BodyStreaming(TimePoint now) {
  if (!call->body_timeout) return;
  outbound::internal::TimeoutList* list = call->deadlines();
  if (list == nullptr) return;
  std::lock_guard lock(mu_);
  if (ended_.load() || cancel_.load() != CancelReason::kNone || body_timer_armed_) return;
  if (!call->HoldDeadline()) return;
  body_timer_armed_ = true;
  body_timeouts_ = list;
  list->Arm(body_timer_, AddSaturated(now, *call->body_timeout));
}

void Attempt::RequestHeadersSent(TimePoint now) {
  if (!request->body_source) {
    // A buffered body too long for one write: its header timers pause
    // while it goes.
    {
      std::lock_guard lock(mu_);
      if (!awaiting_since_ || body_sent_ || ended_.load() ||
          cancel_.load() != CancelReason::kNone || headers_arrived_.load()) {
        return;
      }
      uploading_ = true;
    }
    // Without the lock: a layer's Pause waits for an expiry that may be
    // cancelling this attempt, which takes it.
    Tell(AttemptEvent::kUploading, now);
    return;
  }
  if (!request->body_source.pipe) return;
  outbound::internal::TimeoutList* list = call->deadlines();
  if (list == nullptr) return;
  std::lock_guard lock(mu_);
  if (ended_.load() || cancel_.load() != CancelReason::kNone || body_timer_armed_) return;
  if (!call->HoldDeadline()) return;
  body_timer_armed_ = true;
  streaming_ = true;
  body_timeouts_ = list;
  // Without a Context deadline the stream has no bound but cancellation;
  // the timer is then never armed, and cancelling it does nothing.
  if (call->context_deadline) list->Arm(body_timer_, *call->context_deadline);
}

void Attempt::DisarmBodyTimer() {
  {  // always taken: End relies on it
    std::lock_guard lock(mu_);
    if (!body_timer_armed_) return;
    body_timer_armed_ = false;
  }
  // Outside the lock, as for the layers' timers.
  body_timeouts_->Cancel(body_timer_);
  call->ReleaseDeadline();
}

void Attempt::BodyTimer::Expired() {
  if (auto live = attempt.weak_from_this().lock()) {
    live->body_timer_fired_ = true;
    live->call->DeadlinePassed();
  }
}

AttemptPath::AttemptPath(AttemptSlots slots, std::vector<std::unique_ptr<AttemptLayer>> layers,
                         std::function<void(std::string_view what)> misused)
    : AttemptSlotLayout(std::move(slots)), LayerList(std::move(layers), std::move(misused)) {
  for (std::size_t depth = 0; depth < size(); ++depth) {
    if (auto* listener = dynamic_cast<AttemptListener*>(&at(depth))) {
      listeners_.push_back({depth, listener});
    }
    if (auto* writer = dynamic_cast<AttemptFieldWriter*>(&at(depth))) {
      field_writers_.push_back({depth, writer});
    }
  }
}

void AttemptPath::Misused(std::string_view what) const {
  assert(false && "an attempt layer broke the attempt path's protocol");  // see `what`
  Report(what);
}

}  // namespace outbound::http::internal
