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

  void Start(const std::shared_ptr<Attempt>& attempt) override {
    try {
      auto admitted = breaker_.Allow(attempt->started);
      if (!admitted) return attempt->Complete(Rejected(admitted.error().retry_after));
      attempt->ticket.emplace(std::move(*admitted));
    } catch (...) {  // the user's breaker policy threw
      AttemptOutcome outcome;
      outcome.thrown = std::current_exception();
      return attempt->Complete(std::move(outcome));
    }
    attempt->still_admitted = [this] {
      return breaker_.state(clock_.Now()) != circuit::State::kOpen;
    };
    attempt->Enter(*this);
    next_->Start(attempt);
  }

  void Finish(Attempt& attempt, AttemptOutcome& outcome) override {
    // The breaker opened while the attempt waited to be sent: the transport
    // sent nothing.
    outcome.rejected = !outcome.result && outcome.result.error().kind() == ErrorKind::kRejected;
    try {
      outcome.classification = Decide(*attempt.call, outcome);
      attempt.ticket->Settle(outcome.classification->breaker, clock_.Now());
    } catch (...) {
      // The user's classify or policy threw: the slot is freed now (an
      // unsettled ticket counts nothing), the response dropped, and the
      // exception goes up to the caller.
      attempt.ticket.reset();
      outcome.thrown = std::current_exception();
      outcome.result = Fail(ErrorKind::kTransport, "classify threw");
    }
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
