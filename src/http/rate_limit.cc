// SPDX-License-Identifier: Apache-2.0
// The client's outbound rate limit: a token bucket on the Runtime's clock,
// shared by every call. A call takes a token as it starts, or waits for
// the next one; it fails at once with kDeadline if that wait would end
// after its deadline, and stops waiting (giving its token back) when its
// caller cancels. One token per call: retries and redirects take none.
//
// The limit can be switched while calls go (Client::SetRateLimit), so
// every client has this layer. Off, a call pays one relaxed atomic load
// and the step to the next layer: the price of switching a limit on
// without a restart, taken over rebuilding the call path under calls in
// flight. Off, the layer is not active(), so the client's description of
// its path lists only the layers that act.
#include <cmath>
#include <mutex>

#include "layers.h"

namespace outbound::http::internal {
namespace {

class RateLimiter;

// A call waiting for its token. Ends once: with the token, or cancelled.
class Waiter final : public Cancellable {
 public:
  Waiter(RateLimiter& limiter, std::shared_ptr<CallState> call)
      : limiter_(limiter), call_(std::move(call)) {}
  void Arm(Clock& clock, TimePoint when, const std::shared_ptr<Waiter>& self);
  void Go();
  void Cancel(CancelReason reason) override;

 private:
  RateLimiter& limiter_;
  std::shared_ptr<CallState> call_;
  std::atomic<bool> done_{false};
  std::mutex mu_;  // the timer
  Timer timer_;
};

class RateLimiter final : public RateLimitLayer {
 public:
  RateLimiter(Clock& clock, std::optional<RateLimit> limit) : clock_(clock) { Set(limit); }

  std::string_view name() const override { return "rate limit"; }
  bool active() const override { return on_.load(std::memory_order_relaxed); }

  // A new limit is a full bucket of its own; the old bucket's reservations
  // (calls waiting) still go when their timers fire.
  void Set(std::optional<RateLimit> limit) override {
    std::lock_guard lock(mu_);
    if (limit) {
      rate_ = limit->per_second;
      burst_ = limit->burst;
      tokens_ = limit->burst;
      refilled_ = clock_.Now();
    }
    limit_ = limit;
    on_.store(limit.has_value(), std::memory_order_relaxed);
  }

  std::optional<RateLimit> limit() const override {
    std::lock_guard lock(mu_);
    return limit_;
  }

  void Send(CallState& call) override {
    if (!on_.load(std::memory_order_relaxed)) return Pass(call);
    TimePoint now = clock_.Now();
    Duration wait{0};
    double wait_ns = 0;  // in double: at a tiny rate (1e-11/s) it fits no Duration
    bool too_late = false;
    {
      std::lock_guard lock(mu_);
      // Switched off since the load above: the limit under the lock is the
      // one this call obeys (none: it passes, below, outside the lock).
      if (limit_) {
        Refill(now);
        if (tokens_ < 1) {
          wait_ns = std::ceil((1 - tokens_) / rate_ * 1e9);
          too_late = wait_ns > static_cast<double>((call.deadline() - now).count());
          if (!too_late) wait = Duration(static_cast<Duration::rep>(wait_ns));
        }
        if (!too_late) tokens_ -= 1;  // a reservation when it goes below zero
      }
    }
    if (too_late) {
      CallOutcome outcome;
      outcome.result =
          Fail(ErrorKind::kDeadline,
               "the rate limit's wait (" +
                   std::to_string(static_cast<std::int64_t>(std::min(wait_ns / 1e6, 9e18))) +
                   "ms) would end after the call's deadline: nothing was sent");
      call.End(std::move(outcome));
      return;
    }
    if (wait == Duration::zero()) return Pass(call);
    auto waiter = std::make_shared<Waiter>(*this, call.shared_from_this());
    // Cancelled at once if the call already was.
    call.SetCancelTarget(waiter);
    waiter->Arm(clock_, AddSaturated(now, wait), waiter);
  }

  bool Finish(CallState&, CallOutcome&) override { return true; }

  void Pass(CallState& call) { call.Proceed(*this); }

  // A waiter gave its reservation back.
  void GiveBack() {
    std::lock_guard lock(mu_);
    if (!limit_) return;
    Refill(clock_.Now());
    tokens_ = std::min(tokens_ + 1, static_cast<double>(burst_));
  }

 private:
  void Refill(TimePoint now) {
    if (now <= refilled_) return;
    double elapsed = std::chrono::duration<double>(now - refilled_).count();
    tokens_ = std::min(tokens_ + elapsed * rate_, static_cast<double>(burst_));
    refilled_ = now;
  }

  Clock& clock_;
  std::atomic<bool> on_{false};  // limit_ has a value; read without the lock
  mutable std::mutex mu_;
  std::optional<RateLimit> limit_;  // guarded by mu_, as is all below
  double rate_ = 0;
  int burst_ = 1;
  double tokens_ = 0;  // below zero: tokens reserved by waiting calls
  TimePoint refilled_;
};

void Waiter::Arm(Clock& clock, TimePoint when, const std::shared_ptr<Waiter>& self) {
  std::lock_guard lock(mu_);
  if (done_.load()) return;
  timer_ = clock.ScheduleAt(when, [self] { self->Go(); });
}

void Waiter::Go() {
  if (done_.exchange(true)) return;
  limiter_.Pass(*call_);
}

void Waiter::Cancel(CancelReason reason) {
  if (done_.exchange(true)) return;
  {
    std::lock_guard lock(mu_);
    timer_.Cancel();
  }
  limiter_.GiveBack();
  call_->End(StoppedWaiting(reason, "the rate limit"));
}

}  // namespace

std::unique_ptr<RateLimitLayer> MakeRateLimit(Clock& clock, std::optional<RateLimit> limit) {
  return std::make_unique<RateLimiter>(clock, limit);
}

}  // namespace outbound::http::internal
