// SPDX-License-Identifier: Apache-2.0
// AttemptTimeout: an attempt gets `timeout` from the moment the dependency
// owes it its headers (it was handed to a connection, and its request body
// has gone) to its headers. Dialling counts; time queued in the client's
// own FIFO does not (it is not the dependency's), nor does the body (the
// call's Timeout bounds both).
#include "layers.h"

namespace outbound::http::internal {
namespace {

class AttemptTimeout final : public AttemptLayer {
 public:
  AttemptTimeout(AttemptSlots& slots, Clock& clock, Duration timeout)
      : timer_(slots.Declare<AttemptTimer>()), timeout_(timeout), timeouts_(clock) {}

  std::string_view name() const override { return "attempt timeout"; }

  void Start(const std::shared_ptr<Attempt>& attempt) override {
    attempt->attempt_timeout = timeout_;
    attempt->Proceed(*this);
  }

  void Heard(Attempt& attempt, AttemptEvent event, TimePoint now) override {
    AttemptTimer& timer = attempt.slot(timer_);
    if (event == AttemptEvent::kAwaitingHeaders) {
      timer.Arm(timeouts_, now + timeout_, attempt, &Expired, nullptr);
    } else if (event == AttemptEvent::kHeaders) {
      timer.Disarm();
    }
  }

  // Disarmed before anyone above hears of the attempt's end.
  void Finish(Attempt& attempt, AttemptOutcome&) override { attempt.slot(timer_).Disarm(); }

 private:
  static void Expired(Attempt& attempt, void*) { attempt.Cancel(CancelReason::kAttemptTimeout); }

  AttemptSlots::Index<AttemptTimer> timer_;
  Duration timeout_;
  // Every attempt's timeout has the same length: one list, in order.
  outbound::internal::TimeoutList timeouts_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeAttemptTimeout(AttemptSlots& slots, Clock& clock,
                                                 Duration timeout) {
  return std::make_unique<AttemptTimeout>(slots, clock, timeout);
}

}  // namespace outbound::http::internal
