// SPDX-License-Identifier: Apache-2.0
#include "layers.h"

#include <cstdlib>
#include <utility>

namespace outbound::http::internal {

CallState::~CallState() { Disarm(); }

void CallState::SetInterruptTarget(const std::weak_ptr<Interruptible>& target) {
  {
    std::lock_guard lock(mu_);
    interrupt_ = target;
  }
  CutReason reason = reason_.load();
  if (reason == CutReason::kNone) return;
  if (auto live = target.lock()) live->Interrupt(reason);
}

void CallState::Arm(outbound::internal::TimeoutList& deadlines) {
  deadlines_ = &deadlines;
  deadlines.Arm(deadline_entry_, deadline_);
  std::weak_ptr<CallState> weak = weak_from_this();
  if (caller_cancel_) {
    cancel_id_ = caller_cancel_->OnCancel([weak] {
      if (auto self = weak.lock()) self->Interrupt(CutReason::kCancelled);
    });
  }
}

void CallState::DeadlineEntry::Expired() {
  // Null when the call is being destroyed on another thread (which waits
  // for this to return).
  auto live = call.weak_from_this().lock();
  if (!live) return;
  {
    std::lock_guard lock(live->mu_);
    if (live->deadline_held_) {
      live->deadline_missed_ = true;  // ReleaseDeadline ends the call
      return;
    }
  }
  live->Interrupt(CutReason::kDeadline);
}

bool CallState::HoldDeadline() {
  std::lock_guard lock(mu_);
  if (reason_.load() != CutReason::kNone) return false;
  deadline_held_ = true;
  return true;
}

void CallState::ReleaseDeadline() {
  bool missed = false;
  {
    std::lock_guard lock(mu_);
    deadline_held_ = false;
    missed = std::exchange(deadline_missed_, false);
  }
  if (missed) Interrupt(CutReason::kDeadline);
}

void CallState::Disarm() {
  if (disarmed_.exchange(true)) return;
  if (deadlines_ != nullptr) deadlines_->Cancel(deadline_entry_);
  if (caller_cancel_ && cancel_id_ >= 0) caller_cancel_->Forget(cancel_id_);
  cancel_id_ = -1;
  std::lock_guard lock(mu_);
  interrupt_.reset();
}

void CallState::Interrupt(CutReason reason) {
  CutReason expected = CutReason::kNone;
  if (!reason_.compare_exchange_strong(expected, reason)) return;  // the first reason wins
  std::shared_ptr<Interruptible> target;
  {
    std::lock_guard lock(mu_);
    target = interrupt_.lock();
  }
  if (target) target->Interrupt(reason);
}

void CallState::Enter(CallLayer& layer) {
  // A client's layers are fixed when it is made, and fewer than this.
  if (depth_ == kMaxLayers) std::abort();
  entered_[depth_++] = &layer;
}

void CallState::Complete(CallOutcome&& outcome) {
  while (depth_ > 0) {
    if (!entered_[--depth_]->Finish(*this, outcome)) return;  // taken on: a new request
  }
  std::function<void(CallOutcome &&)> finished = std::move(done);
  finished(std::move(outcome));
}

void Attempt::Enter(AttemptLayer& layer) {
  // A client's layers are fixed when it is made, and fewer than this.
  if (depth_ == kMaxLayers) std::abort();
  entered_[depth_++] = &layer;
}

bool Attempt::Complete(AttemptOutcome&& outcome) {
  if (completed_.exchange(true)) return false;
  DisarmBodyTimer();  // the call's deadline holds again
  while (depth_ > 0) entered_[--depth_]->Finish(*this, outcome);
  std::shared_ptr<AttemptOwner> to = std::move(owner);
  to->AttemptEnded(std::move(outcome));
  return true;
}

bool Attempt::Launch() {
  std::lock_guard lock(mu_);
  launched_ = true;
  return cut_.load() == CutReason::kNone;
}

void Attempt::HandedOver(TimePoint now) {
  // Under the lock, so a disarm on another thread sees the timeout armed.
  // (Arming never waits on anything that waits on this lock.)
  std::lock_guard lock(mu_);
  if (completed_.load() || cut_.load() != CutReason::kNone) return;
  // Once: failure injection hands a delayed attempt over before the
  // transport does.
  if (handed_over_.exchange(true)) return;
  call->attempts_sent.fetch_add(1, std::memory_order_relaxed);
  if (headers_arrived_.load()) return;
  // A streamed body may take longer to send than any answer takes to come
  // (a 1 GiB upload): the wait for the headers starts once it has gone.
  if (request->body_source && !body_sent_) return;  // BodySent starts it
  ArmHeaderTimers(now);
}

void Attempt::BodySent(TimePoint now) {
  std::lock_guard lock(mu_);
  if (body_sent_) return;
  body_sent_ = true;
  if (!handed_over_.load() || completed_.load() || cut_.load() != CutReason::kNone ||
      headers_arrived_.load()) {
    return;
  }
  ArmHeaderTimers(now);
}

void Attempt::ArmHeaderTimers(TimePoint now) {
  if (slow_timeouts_ != nullptr) {
    slow_timer_armed_ = true;
    slow_timeouts_->Arm(slow_timer_, now + slow_after_);
  }
  if (header_timeouts_ == nullptr) return;
  header_timeout_armed_ = true;
  header_timeouts_->Arm(header_timeout_, now + header_timeout_length_);
}

void Attempt::SetCanceller(std::function<void()> canceller) {
  std::unique_lock lock(mu_);
  if (cut_.load() != CutReason::kNone) {
    lock.unlock();
    canceller();
    return;
  }
  canceller_ = std::move(canceller);
}

void Attempt::Cut(CutReason reason) {
  std::function<void()> canceller;
  bool launched;
  {
    std::lock_guard lock(mu_);
    CutReason expected = CutReason::kNone;
    if (!cut_.compare_exchange_strong(expected, reason)) return;
    canceller = std::move(canceller_);
    launched = launched_;
  }
  // The transport lets go of the attempt on its own thread, when it can;
  // the layers above hear of the cut now.
  if (canceller) canceller();
  if (launched) Complete(CutOutcome());
}

AttemptOutcome Attempt::CutOutcome() const {
  AttemptOutcome outcome;
  outcome.body_failed = headers_arrived_.load();
  switch (cut_.load()) {
    case CutReason::kCancelled:
      outcome.result = Fail(ErrorKind::kCancelled, "the caller cancelled the call");
      break;
    case CutReason::kAttemptTimeout:
      outcome.result =
          Fail(ErrorKind::kDeadline,
               "no response headers within the attempt timeout (" +
                   std::to_string(
                       std::chrono::duration_cast<std::chrono::milliseconds>(header_timeout_length_)
                           .count()) +
                   "ms)");
      break;
    default:
      if (body_timer_fired_.load()) {
        outcome.result =
            Fail(ErrorKind::kDeadline,
                 "the body did not end within its body timeout (" +
                     std::to_string(
                         std::chrono::duration_cast<std::chrono::milliseconds>(*call->body_timeout)
                             .count()) +
                     "ms)");
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
  if (completed_.load() || cut_.load() != CutReason::kNone || body_timer_armed_) return;
  if (!call->HoldDeadline()) return;
  body_timer_armed_ = true;
  body_timeouts_ = list;
  list->Arm(body_timer_, now + *call->body_timeout);
}

void Attempt::DisarmBodyTimer() {
  {
    std::lock_guard lock(mu_);
    if (!body_timer_armed_) return;
    body_timer_armed_ = false;
  }
  // Outside the lock, as for the header timeout.
  body_timeouts_->Cancel(body_timer_);
  call->ReleaseDeadline();
}

void Attempt::BodyTimer::Expired() {
  if (auto live = attempt.weak_from_this().lock()) {
    live->body_timer_fired_ = true;
    live->call->DeadlinePassed();
  }
}

void Attempt::SetHeaderTimeout(outbound::internal::TimeoutList& timeouts, Duration timeout) {
  header_timeouts_ = &timeouts;
  header_timeout_length_ = timeout;
}

void Attempt::HeadersArrived() {
  headers_arrived_ = true;
  DisarmHeaderTimeout();
  DisarmSlowTimer();
}

void Attempt::SetSlowTimer(outbound::internal::TimeoutList& timeouts, Duration after,
                           SlowWatcher& watcher) {
  slow_timeouts_ = &timeouts;
  slow_after_ = after;
  slow_watcher_ = &watcher;
}

void Attempt::DisarmSlowTimer() {
  {
    std::lock_guard lock(mu_);
    if (!slow_timer_armed_) return;
    slow_timer_armed_ = false;
  }
  // Outside the lock, as for the header timeout.
  slow_timeouts_->Cancel(slow_timer_);
}

void Attempt::SlowTimer::Expired() {
  if (auto live = attempt.weak_from_this().lock()) attempt.slow_watcher_->Slow(*live);
}

void Attempt::DisarmHeaderTimeout() {
  {
    std::lock_guard lock(mu_);
    if (!header_timeout_armed_) return;
    header_timeout_armed_ = false;
  }
  // Outside the lock: Cancel waits for an expiry running on another
  // thread, and that expiry takes the lock (Cut).
  header_timeouts_->Cancel(header_timeout_);
}

void Attempt::HeaderTimeout::Expired() {
  // Null when the attempt is being destroyed on another thread (which
  // waits for this to return).
  if (auto live = attempt.weak_from_this().lock()) live->Cut(CutReason::kAttemptTimeout);
}

}  // namespace outbound::http::internal
