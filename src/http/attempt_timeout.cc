// SPDX-License-Identifier: Apache-2.0
// AttemptTimeout: an attempt gets its call's route's attempt timeout from
// the moment the dependency owes it its headers (it was handed to a
// connection, and a streamed request body has gone) to its headers.
// Dialling counts; time queued in the client's own FIFO does not (it is
// not the dependency's), nor does a request body's upload (the call's
// Timeout bounds both): the timer pauses while a long one goes.
#include <memory>
#include <vector>

#include "layers.h"

namespace outbound::http::internal {
namespace {

class AttemptTimeout final : public AttemptLayer, public AttemptListener {
 public:
  AttemptTimeout(AttemptSlots& slots, Clock& clock, const Routes& routes)
      : timer_(slots.Declare<AttemptTimer>()) {
    // Every attempt of a route has the same length: one list per route,
    // each in order.
    for (std::size_t i = 0; i < routes.all().size(); ++i) {
      timeouts_.push_back(std::make_unique<outbound::internal::TimeoutList>(clock));
    }
  }

  std::string_view name() const override { return "attempt timeout"; }

  void Start(Attempt& attempt) override {
    if (const auto& timeout = attempt.call->policy->attempt_timeout) {
      attempt.attempt_timeout = *timeout;
    }
    attempt.Proceed(*this);
  }

  void Heard(Attempt& attempt, AttemptEvent event, TimePoint now) override {
    const CallPolicy& policy = *attempt.call->policy;
    if (!policy.attempt_timeout) return;
    AttemptTimer& timer = attempt.slot(timer_);
    if (event == AttemptEvent::kAwaitingHeaders) {
      timer.Arm(*timeouts_[policy.index], AddSaturated(now, *policy.attempt_timeout), attempt,
                &Expired, nullptr);
    } else if (event == AttemptEvent::kUploading) {
      timer.Pause(now);
    } else if (event == AttemptEvent::kUploaded) {
      timer.Resume(now);
    } else if (event == AttemptEvent::kHeaders) {
      timer.Disarm();
    }
  }

  // Disarmed before anyone above hears of the attempt's end.
  void Finish(Attempt& attempt, AttemptOutcome&) override { attempt.slot(timer_).Disarm(); }

 private:
  static void Expired(Attempt& attempt, void*) { attempt.Cancel(CancelReason::kAttemptTimeout); }

  AttemptSlots::Index<AttemptTimer> timer_;
  std::vector<std::unique_ptr<outbound::internal::TimeoutList>> timeouts_;  // by CallPolicy::index
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeAttemptTimeout(AttemptSlots& slots, Clock& clock,
                                                 const Routes& routes) {
  return std::make_unique<AttemptTimeout>(slots, clock, routes);
}

}  // namespace outbound::http::internal
