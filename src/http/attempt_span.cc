// The attempt span: one record per attempt, rejected ones included, with
// its duration on the client's clock. Telemetry's client span goes here.
#include "layers.h"

namespace outbound::http::internal {
namespace {

class AttemptSpan final : public AttemptLayer {
 public:
  AttemptSpan(std::unique_ptr<AttemptLayer> next, Clock& clock)
      : next_(std::move(next)), clock_(clock) {}

  void Start(const std::shared_ptr<Attempt>& attempt) override {
    attempt->Enter(*this);
    next_->Start(attempt);
  }

  void Finish(Attempt& attempt, AttemptOutcome& outcome) override {
    AttemptRecord& record = outcome.record;
    record.attempt = attempt.number;
    record.resend_count = attempt.resend_count;
    record.duration = clock_.Now() - attempt.started;
    if (outcome.result) {
      record.status = outcome.result->status;
    } else {
      record.error = outcome.result.error().kind();
      record.error_message = outcome.result.error().message();
    }
  }

 private:
  std::unique_ptr<AttemptLayer> next_;
  Clock& clock_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeAttemptSpan(std::unique_ptr<AttemptLayer> next, Clock& clock) {
  return std::make_unique<AttemptSpan>(std::move(next), clock);
}

}  // namespace outbound::http::internal
