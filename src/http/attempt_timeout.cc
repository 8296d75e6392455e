// SPDX-License-Identifier: Apache-2.0
// AttemptTimeout: an attempt gets `timeout` from the moment the transport
// hands it to a connection to its headers. Dialling counts; time queued in
// the client's own FIFO does not (it is not the dependency's), nor does the
// body (the call's Timeout bounds both).
#include "layers.h"

namespace outbound::http::internal {
namespace {

class AttemptTimeout final : public AttemptLayer {
 public:
  AttemptTimeout(std::unique_ptr<AttemptLayer> next, Clock& clock, Duration timeout)
      : timeout_(timeout), timeouts_(clock), next_(std::move(next)) {}

  void Start(const std::shared_ptr<Attempt>& attempt) override {
    // Armed when the transport hands the attempt over; the headers disarm
    // it (Attempt::HeadersArrived), and so does the attempt's end, before
    // anyone above hears of it.
    attempt->SetHeaderTimeout(timeouts_, timeout_);
    attempt->Enter(*this);
    next_->Start(attempt);
  }

  void Finish(Attempt& attempt, AttemptOutcome&) override { attempt.DisarmHeaderTimeout(); }

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
