// AttemptTimeout: an attempt gets `timeout` from its start to its headers.
// Time queued in the client's FIFO and dialling count; the body does not
// (the call's Timeout bounds that).
#include "layers.h"

namespace outbound::http::internal {
namespace {

class AttemptTimeout final : public AttemptLayer {
 public:
  AttemptTimeout(std::unique_ptr<AttemptLayer> next, Clock& clock, Duration timeout)
      : timeout_(timeout), timeouts_(clock), next_(std::move(next)) {}

  void Start(const std::shared_ptr<Attempt>& attempt) override {
    // The headers disarm it (Attempt::HeadersArrived), and so does the
    // attempt's end, before anyone above hears of it.
    attempt->ArmHeaderTimeout(timeouts_, attempt->started + timeout_);
    attempt->Enter(*this);
    next_->Start(attempt);
  }

  void Finish(Attempt& attempt, AttemptOutcome&) override { attempt.HeadersArrived(); }

 private:
  Duration timeout_;
  // Every attempt's timeout has the same length: one list, in order.
  outbound::internal::TimeoutList timeouts_;
  // Declared last so the layers below, and the attempts they hold, go first.
  std::unique_ptr<AttemptLayer> next_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeAttemptTimeout(std::unique_ptr<AttemptLayer> next, Clock& clock,
                                                 Duration timeout) {
  return std::make_unique<AttemptTimeout>(std::move(next), clock, timeout);
}

}  // namespace outbound::http::internal
