#include "layers.h"

#include <cstdlib>

namespace outbound::http::internal {

CallState::~CallState() { Disarm(); }

void CallState::SetInterruptTarget(std::weak_ptr<Interruptible> target) {
  {
    std::lock_guard lock(mu_);
    interrupt_ = target;
  }
  CutReason reason = reason_.load();
  if (reason == CutReason::kNone) return;
  if (auto live = target.lock()) live->Interrupt(reason);
}

void CallState::Arm(Clock& clock) {
  std::weak_ptr<CallState> weak = weak_from_this();
  deadline_timer_ = clock.ScheduleAt(deadline_, [weak] {
    if (auto self = weak.lock()) self->Interrupt(CutReason::kDeadline);
  });
  if (caller_cancel_) {
    cancel_id_ = caller_cancel_->OnCancel([weak] {
      if (auto self = weak.lock()) self->Interrupt(CutReason::kCancelled);
    });
  }
}

void CallState::Disarm() {
  deadline_timer_.Cancel();
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

void Attempt::Enter(AttemptLayer& layer) {
  // A client's layers are fixed when it is made, and fewer than this.
  if (depth_ == kMaxLayers) std::abort();
  entered_[depth_++] = &layer;
}

void Attempt::Complete(AttemptOutcome outcome) {
  while (depth_ > 0) entered_[--depth_]->Finish(*this, outcome);
  std::shared_ptr<AttemptOwner> to = std::move(owner);
  to->AttemptEnded(std::move(outcome));
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
  {
    std::lock_guard lock(mu_);
    CutReason expected = CutReason::kNone;
    if (!cut_.compare_exchange_strong(expected, reason)) return;
    canceller = std::move(canceller_);
  }
  if (canceller) canceller();
}

void Attempt::SetHeaderTimer(Timer timer) {
  std::lock_guard lock(mu_);
  header_timer_ = std::move(timer);
}

void Attempt::HeadersArrived() {
  std::lock_guard lock(mu_);
  header_timer_.Cancel();
}

}  // namespace outbound::http::internal
