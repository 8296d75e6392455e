// SPDX-License-Identifier: Apache-2.0
#include "call.h"

#include <cassert>
#include <utility>

namespace outbound::http::internal {
namespace {

// How many CallState::Stop calls run on this thread now.
thread_local int t_stopping = 0;

}  // namespace

CallState::~CallState() { Disarm(); }

void CallState::SetCancelTarget(const std::weak_ptr<Cancellable>& target) {
  {
    std::lock_guard lock(mu_);
    cancel_target_ = target;
  }
  CancelReason reason = reason_.load();
  if (reason == CancelReason::kNone) return;
  if (auto live = target.lock()) live->Cancel(reason);
}

void CallState::Arm(outbound::internal::TimeoutList& deadlines) {
  deadlines_ = &deadlines;
  deadlines.Arm(deadline_entry_, deadline_);
  std::weak_ptr<CallState> weak = weak_from_this();
  if (caller_cancel_) {
    cancel_id_ = caller_cancel_->OnCancel([weak] {
      if (auto self = weak.lock()) self->Stop(CancelReason::kCancelled);
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
  live->Stop(CancelReason::kDeadline);
}

bool CallState::HoldDeadline() {
  std::lock_guard lock(mu_);
  if (reason_.load() != CancelReason::kNone) return false;
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
  if (missed) Stop(CancelReason::kDeadline);
}

void CallState::Disarm() {
  if (disarmed_.exchange(true)) return;
  if (deadlines_ != nullptr) deadlines_->Cancel(deadline_entry_);
  if (caller_cancel_ && cancel_id_ >= 0) caller_cancel_->Forget(cancel_id_);
  cancel_id_ = -1;
  std::lock_guard lock(mu_);
  cancel_target_.reset();
}

void CallState::Stop(CancelReason reason) {
  CancelReason expected = CancelReason::kNone;
  if (!reason_.compare_exchange_strong(expected, reason)) return;  // the first reason wins
  std::shared_ptr<Cancellable> target;
  {
    std::lock_guard lock(mu_);
    target = cancel_target_.lock();
  }
  if (!target) return;
  struct StoppingScope {
    StoppingScope() { ++t_stopping; }
    ~StoppingScope() { --t_stopping; }
  } scope;
  target->Cancel(reason);
}

bool CallState::Stopping() { return t_stopping > 0; }

void CallState::Begin(const CallPath& path) {
  assert(!weak_from_this().expired() && "the caller holds the call while it runs");
  path_ = &path;
  depth_ = 0;
  in_flight_ = true;
  path.at(0).Send(*this);
}

void CallState::Proceed(CallLayer& from) {
  if (depth_ >= path_->size() || &path_->at(depth_) != &from || depth_ + 1 >= path_->size()) {
    std::string what =
        std::string(from.name()) + " handed on a call it was not running, or past the last layer";
    path_->Misused(what);
    CallOutcome outcome;
    outcome.result = Fail(ErrorKind::kLocalResource, "internal error: " + what);
    return End(std::move(outcome));
  }
  assert(!weak_from_this().expired() && "the caller holds the call while it runs");
  in_flight_ = true;
  ++depth_;
  path_->at(depth_).Send(*this);
}

void CallState::End(CallOutcome&& outcome) {
  if (!in_flight_) {
    // Ended twice: the first end stands.
    path_->Misused("a call was ended twice");
    return;
  }
  in_flight_ = false;
  while (depth_ > 0) {
    --depth_;
    if (!path_->at(depth_).Finish(*this, outcome)) return;  // taken on: a new request
  }
  std::function<void(CallOutcome &&)> finished = std::move(done);
  finished(std::move(outcome));
}

void CallPath::Misused(std::string_view what) const {
  assert(false && "a call layer broke the call path's protocol");  // see `what`
  Report(what);
}

CallOutcome StoppedWaiting(CancelReason reason, std::string_view waiting_for) {
  CallOutcome outcome;
  std::string what(waiting_for);
  outcome.result =
      reason == CancelReason::kCancelled || reason == CancelReason::kClientDestroyed
          ? Fail(ErrorKind::kCancelled, std::string(CancelledMessage(reason)) +
                                            " while it waited for " + what + ": nothing was sent")
          : Fail(ErrorKind::kDeadline, "the call's deadline passed while it waited for " + what);
  return outcome;
}

}  // namespace outbound::http::internal
