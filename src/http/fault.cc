// SPDX-License-Identifier: Apache-2.0
// Failure injection: a call's scenario is read once per call (only when
// the client's faults are on), and its attempts aborted, delayed or
// answered below the attempt timeout, where a real dependency's failure
// would come from: every layer above sees it as real.
#include "fault.h"

#include <mutex>

#include "layers.h"

namespace outbound::http::internal {
namespace {

std::string_view Name(InjectedFault::Kind kind) {
  switch (kind) {
    case InjectedFault::Kind::kAbort:
      return "abort";
    case InjectedFault::Kind::kDelay:
      return "delay";
    case InjectedFault::Kind::kStatus:
      return "status";
  }
  return "abort";
}

class FaultInjection final : public AttemptLayer {
 public:
  FaultInjection(Clock& clock, Random& random, InjectedAnswer answer,
                 const std::atomic<std::uint8_t>& switches)
      : clock_(clock), random_(random), answer_(std::move(answer)), switches_(switches) {}

  std::string_view name() const override { return "fault injection"; }
  bool active() const override {
    return (switches_.load(std::memory_order_relaxed) & kFaultsOn) != 0;
  }

  void Start(Attempt& attempt) override {
    const std::optional<InjectedFault>& fault = attempt.call->fault;
    if (!fault || !(random_.Uniform() < fault->probability)) return attempt.Proceed(*this);
    if (attempt.span) {
      attempt.span->SetAttribute({"outbound.fault.injected", Name(fault->kind)});
    }
    TimePoint now = clock_.Now();
    // Sent, as far as every layer above is concerned: the attempt timeout
    // runs from here, and the breaker counts what comes back.
    AttemptOutcome outcome;
    switch (fault->kind) {
      case InjectedFault::Kind::kAbort:
        if (!attempt.Sent(now)) return Cancelled(attempt);
        outcome.result = Fail(ErrorKind::kTransport, "injected fault: the attempt was aborted");
        attempt.End(std::move(outcome));
        return;
      case InjectedFault::Kind::kStatus: {
        if (!attempt.Sent(now)) return Cancelled(attempt);
        attempt.HeadersArrived(now);
        Response response;
        if (answer_) {
          response = answer_(fault->status, fault->retry_after);
        } else {
          response.status = fault->status;
          if (fault->retry_after) {
            response.headers.Add("Retry-After", std::to_string(*fault->retry_after));
          }
          response.version = "1.1";
        }
        response.received_at = clock_.WallNow();
        outcome.result = std::move(response);
        attempt.End(std::move(outcome));
        return;
      }
      case InjectedFault::Kind::kDelay:
        return Delay(attempt, now + fault->delay);
    }
  }

  void Finish(Attempt&, AttemptOutcome&) override {}

 private:
  // Cancelled before it was sent: it ends so, and nothing is injected.
  static void Cancelled(Attempt& attempt) { attempt.End(attempt.CancelledOutcome()); }

  struct Delayed {
    std::mutex mu;
    Timer timer;
  };

  void Delay(Attempt& attempt, TimePoint until) {
    // From here a cancellation (the attempt timeout, the deadline, the
    // caller) ends the attempt at once.
    if (!attempt.Launch() || !attempt.Sent(clock_.Now())) return Cancelled(attempt);
    auto delayed = std::make_shared<Delayed>();
    std::weak_ptr<Attempt> weak = attempt.weak_from_this();
    {
      std::lock_guard lock(delayed->mu);
      delayed->timer = clock_.ScheduleAt(until, [this, weak] {
        auto live = weak.lock();
        if (live && live->cancel_reason() == CancelReason::kNone) live->Proceed(*this);
      });
    }
    // Cancelled already, the canceller has run: the delay ends unanswered.
    static_cast<void>(attempt.SetCanceller([delayed] {
      std::lock_guard lock(delayed->mu);
      delayed->timer.Cancel();
    }));
  }

  Clock& clock_;
  Random& random_;
  InjectedAnswer answer_;
  const std::atomic<std::uint8_t>& switches_;  // the client's, which outlives the layer
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeFaultInjection(Clock& clock, Random& random,
                                                 InjectedAnswer answer,
                                                 const std::atomic<std::uint8_t>& switches) {
  return std::make_unique<FaultInjection>(clock, random, std::move(answer), switches);
}

}  // namespace outbound::http::internal
