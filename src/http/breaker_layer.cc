// SPDX-License-Identifier: Apache-2.0
// The breaker layer: every attempt is one the breaker admits or rejects, and
// every admitted attempt's result is counted in it, once, as the classify
// layer below classified it (but a failure outlier detection took for its
// endpoint's alone).
// With the breaker's slow-call rule on, an attempt whose headers have not
// arrived `slow_call` after it was sent is counted as a failure then, so a
// hung dependency opens the breaker (or fails a probe) long before the
// attempt times out; the attempt itself goes on, and its result is not
// counted again.
#include "layers.h"

namespace outbound::http::internal {
namespace {

class BreakerLayer final : public AttemptLayer, public AttemptListener, public Admission {
 public:
  BreakerLayer(AttemptSlots& slots, circuit::Breaker& breaker, Clock& clock,
               const ClientTelemetry& telemetry)
      : slot_(slots.Declare<PerAttempt>()),
        slow_timeouts_(clock),
        breaker_(breaker),
        clock_(clock),
        telemetry_(telemetry) {}

  std::string_view name() const override { return "breaker"; }

  void Start(Attempt& attempt) override {
    PerAttempt& mine = attempt.slot(slot_);
    try {
      telemetry::TransitionCause cause(&attempt.trace_context());
      auto admitted = breaker_.Allow(attempt.started);
      if (!admitted) {
        telemetry_.resilience().BreakerCounted("rejected");
        attempt.End(Rejected(admitted.error().retry_after));
        return;
      }
      mine.ticket.emplace(std::move(*admitted));
    } catch (...) {  // the user's breaker policy threw
      AttemptOutcome outcome;
      outcome.thrown = std::current_exception();
      attempt.End(std::move(outcome));
      return;
    }
    attempt.admission = this;
    attempt.Proceed(*this);
  }

  bool StillAdmitted(TimePoint now) const override {
    return breaker_.state(now) != circuit::State::kOpen;
  }

  // The slow-call rule: a timer from the moment the dependency owes the
  // headers, stopped by them (and paused while a long request body goes).
  void Heard(Attempt& attempt, AttemptEvent event, TimePoint now) override {
    Duration slow_call = breaker_.config().slow_call;
    if (slow_call <= Duration::zero()) return;
    PerAttempt& mine = attempt.slot(slot_);
    if (event == AttemptEvent::kAwaitingHeaders) {
      mine.slow_timer.Arm(slow_timeouts_, AddSaturated(now, slow_call), attempt, &Slow, this);
    } else if (event == AttemptEvent::kUploading) {
      mine.slow_timer.Pause(now);
    } else if (event == AttemptEvent::kUploaded) {
      mine.slow_timer.Resume(now);
    } else if (event == AttemptEvent::kHeaders) {
      mine.slow_timer.Disarm();
    }
  }

  void Finish(Attempt& attempt, AttemptOutcome& outcome) override {
    PerAttempt& mine = attempt.slot(slot_);
    // From here on the slow-call rule leaves the ticket alone.
    mine.slow_timer.Disarm();
    if (mine.slow_thrown || !outcome.classification) {
      // The breaker's policy threw as the slow-call rule counted the
      // attempt, or the user's classify threw: the slot is freed now (an
      // unsettled ticket counts nothing). The policy threw before classify
      // ran: its throw is the one the caller hears, unless the user's code
      // threw before it (a body sink).
      mine.ticket.reset();
      if (mine.slow_thrown && (!outcome.thrown || outcome.classify_threw)) {
        outcome.thrown = mine.slow_thrown;
        outcome.classify_threw = false;
        outcome.result = Fail(ErrorKind::kTransport, "classify threw");
      }
      return;
    }
    try {
      // A failure outlier detection took for its endpoint's alone (the
      // endpoint is out for it) is not the dependency's: one replica of
      // several failing fast would otherwise open the breaker for all.
      circuit::Outcome verdict = outcome.endpoint_took_failure ? circuit::Outcome::kIgnored
                                                               : outcome.classification->breaker;
      if (!mine.ticket->settled()) {  // else the slow-call rule counted it
        telemetry_.resilience().BreakerCounted(outcome.rejected ? "rejected"
                                                                : circuit::ToString(verdict));
      }
      telemetry::TransitionCause cause(&attempt.trace_context());
      mine.ticket->Settle(verdict, outcome.ended);
    } catch (...) {
      // The breaker's policy threw: the slot is freed now (an unsettled
      // ticket counts nothing), the response dropped, and the exception
      // goes up to the caller, unless the user's code threw first.
      mine.ticket.reset();
      if (!outcome.thrown) {
        outcome.thrown = std::current_exception();
        outcome.result = Fail(ErrorKind::kTransport, "classify threw");
      }
    }
  }

 private:
  // What the layer keeps for one attempt: the admission its result
  // settles, the slow-call timer, and what the breaker's policy threw when
  // the slow-call rule settled it early.
  struct PerAttempt {
    std::optional<circuit::Ticket> ticket;
    AttemptTimer slow_timer;
    std::exception_ptr slow_thrown;
  };

  static void Slow(Attempt& attempt, void* context) {
    auto& self = *static_cast<BreakerLayer*>(context);
    PerAttempt& mine = attempt.slot(self.slot_);
    if (!mine.ticket || mine.ticket->settled()) return;
    try {
      self.telemetry_.resilience().BreakerCounted(circuit::ToString(circuit::Outcome::kFailure));
      telemetry::TransitionCause cause(&attempt.trace_context());
      mine.ticket->Settle(circuit::Outcome::kFailure, self.clock_.Now());
    } catch (...) {  // the user's policy threw: Finish hands it to the caller
      mine.slow_thrown = std::current_exception();
    }
  }

  static AttemptOutcome Rejected(Duration retry_after) {
    AttemptOutcome outcome;
    outcome.rejected = true;
    Error error(ErrorKind::kRejected, "the circuit breaker is open: nothing was sent");
    error.set_retry_after(retry_after);
    outcome.result = tl::unexpected(std::move(error));
    outcome.classification = Classification{retry::Outcome::kStop, {}, circuit::Outcome::kIgnored};
    return outcome;
  }

  AttemptSlots::Index<PerAttempt> slot_;
  // Every attempt's slow-call timer has the same length: one list, in
  // order.
  outbound::internal::TimeoutList slow_timeouts_;
  circuit::Breaker& breaker_;
  Clock& clock_;
  const ClientTelemetry& telemetry_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeBreakerLayer(AttemptSlots& slots, circuit::Breaker& breaker,
                                               Clock& clock, const ClientTelemetry& telemetry) {
  return std::make_unique<BreakerLayer>(slots, breaker, clock, telemetry);
}

}  // namespace outbound::http::internal
