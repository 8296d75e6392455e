// SPDX-License-Identifier: Apache-2.0
// The breaker layer: every attempt is one the breaker admits or rejects, and
// every admitted attempt's result is counted in it, once, as classified.
// With the breaker's slow-call rule on, an attempt whose headers have not
// arrived `slow_call` after it was sent is counted as a failure then, so a
// hung dependency opens the breaker (or fails a probe) long before the
// attempt times out; the attempt itself goes on, and its result is not
// counted again.
#include <array>
#include <mutex>

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
  // headers, stopped by them.
  void Heard(Attempt& attempt, AttemptEvent event, TimePoint now) override {
    Duration slow_call = breaker_.config().slow_call;
    if (slow_call <= Duration::zero()) return;
    PerAttempt& mine = attempt.slot(slot_);
    if (event == AttemptEvent::kAwaitingHeaders) {
      mine.slow_timer.Arm(slow_timeouts_, AddSaturated(now, slow_call), attempt, &Slow, this);
    } else if (event == AttemptEvent::kHeaders) {
      mine.slow_timer.Disarm();
    }
  }

  void Finish(Attempt& attempt, AttemptOutcome& outcome) override {
    PerAttempt& mine = attempt.slot(slot_);
    // From here on the slow-call rule leaves the ticket alone.
    mine.slow_timer.Disarm();
    // The breaker opened while the attempt waited to be sent: the transport
    // sent nothing.
    outcome.rejected = !outcome.result && outcome.result.error().kind() == ErrorKind::kRejected;
    try {
      if (mine.slow_thrown) std::rethrow_exception(mine.slow_thrown);
      outcome.classification = Decide(attempt, outcome);
      if (!mine.ticket->settled()) {  // else the slow-call rule counted it
        telemetry_.resilience().BreakerCounted(
            outcome.rejected ? "rejected" : circuit::ToString(outcome.classification->breaker));
      }
      telemetry::TransitionCause cause(&attempt.trace_context());
      mine.ticket->Settle(outcome.classification->breaker, outcome.ended);
    } catch (...) {
      // The user's classify or policy threw: the slot is freed now (an
      // unsettled ticket counts nothing), the response dropped, and the
      // exception goes up to the caller, unless the user's code threw
      // first (a body sink): the first throw is the one the caller hears.
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

  // What the client decides itself comes first; Classify decides the rest.
  Classification Decide(const Attempt& attempt, AttemptOutcome& outcome) {
    using retry::Outcome;
    constexpr auto kIgnored = circuit::Outcome::kIgnored;
    constexpr auto kFailure = circuit::Outcome::kFailure;
    if (!outcome.result) {
      ErrorKind kind = outcome.result.error().kind();
      if (attempt.call->cancelled() || kind == ErrorKind::kCancelled) {
        return {Outcome::kStop, {}, kIgnored};
      }
      if (outcome.rejected) return {Outcome::kStop, {}, kIgnored};
      // This process's own shortage, the caller's own limit, or its body
      // reader's failure: nothing about the dependency's health.
      if (kind == ErrorKind::kLocalResource || kind == ErrorKind::kResponseTooLarge ||
          kind == ErrorKind::kInvalidRequest) {
        return {Outcome::kStop, {}, kIgnored};
      }
      // Never handed to a connection: it waited in the client's own queue.
      // A middleware's own failure stands for a sent attempt's, but for
      // its own deadline or refusal (a local quota), which say nothing of
      // the dependency.
      bool own_limit = kind == ErrorKind::kDeadline || kind == ErrorKind::kRejected;
      if (!attempt.sent() && (!outcome.answered_by_middleware || own_limit)) {
        return {Outcome::kStop, {}, kIgnored};
      }
      if (attempt.call->deadline_passed()) return {Outcome::kStop, {}, kFailure};
      if (outcome.unprocessed) return {Outcome::kRetry, {}, kIgnored};
      // Lost with its connection when another attempt already counted
      // that loss, or with a kept-alive connection the server closed.
      if (outcome.connection_lost &&
          (outcome.kept_alive_closed || !FirstLossOf(outcome.connection))) {
        outcome.collateral = true;
        return {Outcome::kRetry, {}, kIgnored};
      }
      if (outcome.cannot_improve) return {Outcome::kStop, {}, kFailure};
      // The dependency sent its headers and then failed.
      if (outcome.body_failed) return {Outcome::kStop, {}, kFailure};
    }
    const CallRequest& sent = *attempt.request;
    Classification c = attempt.call->policy->classify(
        {sent.method, sent.url, sent.headers, attempt.call->body_sink != nullptr}, outcome.result);
    // The caller has part of this answer already: no other can follow it
    // (a success stays one, for the retry budget and the record).
    if (outcome.body_streamed && c.retry == Outcome::kRetry) c.retry = Outcome::kStop;
    return c;
  }

  // Whether `connection`'s loss is heard of for the first time: the
  // attempts it took down with it count once.
  bool FirstLossOf(std::uint64_t connection) {
    if (connection == 0) return true;
    std::lock_guard lock(lost_mu_);
    for (std::uint64_t seen : lost_) {
      if (seen == connection) return false;
    }
    lost_[next_lost_++ % lost_.size()] = connection;
    return true;
  }

  AttemptSlots::Index<PerAttempt> slot_;
  // Every attempt's slow-call timer has the same length: one list, in
  // order.
  outbound::internal::TimeoutList slow_timeouts_;
  circuit::Breaker& breaker_;
  Clock& clock_;
  const ClientTelemetry& telemetry_;
  // The connections whose loss was counted lately (a few suffice: the
  // attempts a connection takes down end together).
  std::mutex lost_mu_;
  std::array<std::uint64_t, 32> lost_{};
  std::size_t next_lost_ = 0;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeBreakerLayer(AttemptSlots& slots, circuit::Breaker& breaker,
                                               Clock& clock, const ClientTelemetry& telemetry) {
  return std::make_unique<BreakerLayer>(slots, breaker, clock, telemetry);
}

}  // namespace outbound::http::internal
