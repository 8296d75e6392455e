// The attempt span: one record per attempt, rejected ones included, with
// its duration on the client's clock. Telemetry's client span goes here.
#include "layers.h"

namespace outbound::http::internal {
namespace {

class AttemptSpan final : public AttemptLayer {
 public:
  AttemptSpan(std::unique_ptr<AttemptLayer> next, Clock& clock)
      : next_(std::move(next)), clock_(clock) {}

  void Start(std::shared_ptr<Attempt> attempt, AttemptDone done) override {
    AttemptRecord record;
    record.attempt = attempt->number;
    record.resend_count = attempt->resend_count;
    record.method = attempt->request->method;
    record.url = attempt->request->url;
    TimePoint start = clock_.Now();
    next_->Start(std::move(attempt), [this, start, record = std::move(record),
                                      done = std::move(done)](AttemptOutcome outcome) mutable {
      record.duration = clock_.Now() - start;
      if (outcome.result) {
        record.status = outcome.result->status;
      } else {
        record.error = outcome.result.error().kind();
        record.error_message = outcome.result.error().message();
      }
      outcome.record = std::move(record);
      done(std::move(outcome));
    });
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
