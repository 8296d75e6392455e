// The breaker layer: every attempt is one the breaker admits or rejects, and
// every admitted attempt's result is counted in it, once, as classified.
#include "layers.h"

namespace outbound::http::internal {
namespace {

class BreakerLayer final : public AttemptLayer {
 public:
  BreakerLayer(std::unique_ptr<AttemptLayer> next, circuit::Breaker& breaker, Classify classify,
               Clock& clock)
      : next_(std::move(next)), breaker_(breaker), classify_(std::move(classify)), clock_(clock) {}

  void Start(std::shared_ptr<Attempt> attempt, AttemptDone done) override {
    std::optional<circuit::Ticket> ticket;
    try {
      auto admitted = breaker_.Allow(clock_.Now());
      if (!admitted) return done(Rejected(admitted.error().retry_after));
      ticket.emplace(std::move(*admitted));
    } catch (...) {  // the user's breaker policy threw
      AttemptOutcome outcome;
      outcome.thrown = std::current_exception();
      return done(std::move(outcome));
    }
    auto shared_ticket = std::make_shared<circuit::Ticket>(std::move(*ticket));
    attempt->still_admitted = [this] {
      return breaker_.state(clock_.Now()) != circuit::State::kOpen;
    };
    std::shared_ptr<CallState> call = attempt->call;
    next_->Start(std::move(attempt), [this, shared_ticket, call,
                                      done = std::move(done)](AttemptOutcome outcome) {
      // The breaker opened while the attempt waited to be sent:
      // the transport sent nothing.
      outcome.rejected = !outcome.result && outcome.result.error().kind() == ErrorKind::kRejected;
      try {
        outcome.classification = Decide(*call, outcome);
        shared_ticket->Settle(outcome.classification->breaker, clock_.Now());
      } catch (...) {
        // The user's classify or policy threw: the slot is freed now (an
        // unsettled ticket counts nothing), the response dropped, and the
        // exception goes up to the caller.
        { circuit::Ticket released = std::move(*shared_ticket); }
        outcome.thrown = std::current_exception();
        outcome.result = Fail(ErrorKind::kTransport, "classify threw");
      }
      done(std::move(outcome));
    });
  }

 private:
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
  Classification Decide(const CallState& call, const AttemptOutcome& outcome) const {
    using retry::Outcome;
    if (!outcome.result) {
      if (call.cancelled()) return {Outcome::kStop, {}, circuit::Outcome::kIgnored};
      if (call.deadline_passed()) return {Outcome::kStop, {}, circuit::Outcome::kFailure};
      // The dependency sent its headers and then failed.
      if (outcome.body_failed) return {Outcome::kStop, {}, circuit::Outcome::kFailure};
      if (outcome.rejected) return {Outcome::kStop, {}, circuit::Outcome::kIgnored};
      // Too large is the caller's limit, not the dependency's failure.
      if (outcome.result.error().kind() == ErrorKind::kResponseTooLarge) {
        return {Outcome::kStop, {}, circuit::Outcome::kIgnored};
      }
    }
    return classify_(outcome.result);
  }

  std::unique_ptr<AttemptLayer> next_;
  circuit::Breaker& breaker_;
  Classify classify_;
  Clock& clock_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeBreakerLayer(std::unique_ptr<AttemptLayer> next,
                                               circuit::Breaker& breaker, Classify classify,
                                               Clock& clock) {
  return std::make_unique<BreakerLayer>(std::move(next), breaker, std::move(classify), clock);
}

}  // namespace outbound::http::internal
