// AttemptTimeout: an attempt gets `timeout` from its start to its headers.
// Time queued in the client's FIFO and dialling count; the body does not
// (the call's Timeout bounds that).
#include "layers.h"

namespace outbound::http::internal {
namespace {

class AttemptTimeout final : public AttemptLayer {
 public:
  AttemptTimeout(std::unique_ptr<AttemptLayer> next, Clock& clock, Duration timeout)
      : next_(std::move(next)), clock_(clock), timeout_(timeout) {}

  void Start(const std::shared_ptr<Attempt>& attempt) override {
    // The headers cancel the timer (Attempt::HeadersArrived), and so does
    // the attempt's end, before anyone above hears of it.
    attempt->SetHeaderTimer(
        clock_.ScheduleAfter(timeout_, [weak = std::weak_ptr<Attempt>(attempt)] {
          if (auto live = weak.lock()) live->Cut(CutReason::kAttemptTimeout);
        }));
    attempt->Enter(*this);
    next_->Start(attempt);
  }

  void Finish(Attempt& attempt, AttemptOutcome&) override { attempt.HeadersArrived(); }

 private:
  std::unique_ptr<AttemptLayer> next_;
  Clock& clock_;
  Duration timeout_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeAttemptTimeout(std::unique_ptr<AttemptLayer> next, Clock& clock,
                                                 Duration timeout) {
  return std::make_unique<AttemptTimeout>(std::move(next), clock, timeout);
}

}  // namespace outbound::http::internal
