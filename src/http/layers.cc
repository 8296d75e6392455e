#include "layers.h"

namespace outbound::http::internal {

CallState::~CallState() { Disarm(); }

void CallState::SetInterruptTarget(std::function<void(CutReason)> interrupt) {
  {
    std::lock_guard lock(mu_);
    interrupt_ = interrupt;
  }
  CutReason reason = reason_.load();
  if (reason != CutReason::kNone) interrupt(reason);
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
  interrupt_ = nullptr;
}

void CallState::Interrupt(CutReason reason) {
  CutReason expected = CutReason::kNone;
  if (!reason_.compare_exchange_strong(expected, reason)) return;  // the first reason wins
  std::function<void(CutReason)> interrupt;
  {
    std::lock_guard lock(mu_);
    interrupt = interrupt_;
  }
  if (interrupt) interrupt(reason);
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
