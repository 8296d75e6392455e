// SPDX-License-Identifier: Apache-2.0
// The attempt span: one record, one CLIENT span and one duration data point
// per attempt, rejected ones included, timed on the client's clock. The span
// starts above the breaker, so a rejection has its span too, and ends when
// the attempt's body has been read, after the retry loop decided what
// follows it (outbound.retry.reason).
#include "endpoint_health.h"
#include "layers.h"

namespace outbound::http::internal {
namespace {

class AttemptSpan final : public AttemptLayer, public AttemptListener {
 public:
  AttemptSpan(AttemptSlots& slots, const ClientTelemetry& telemetry)
      : in_queue_(slots.Declare<std::optional<Duration>>()), telemetry_(telemetry) {}

  std::string_view name() const override { return "attempt span"; }

  void Start(Attempt& attempt) override {
    telemetry_.AttemptStarted(attempt);
    attempt.Proceed(*this);
  }

  // How long the attempt waited for a connection: from its start to its
  // hand-over, before the dependency had it.
  void Heard(Attempt& attempt, AttemptEvent event, TimePoint now) override {
    if (event == AttemptEvent::kSent) attempt.slot(in_queue_) = now - attempt.started;
  }

  void Finish(Attempt& attempt, AttemptOutcome& outcome) override {
    AttemptRecord& record = outcome.record;
    record.attempt = attempt.number;
    record.resend_count = attempt.resend_count;
    record.hedge = attempt.hedge;
    record.duration = outcome.ended - attempt.started;
    const telemetry::SpanContext& trace = attempt.trace_context();
    record.trace_id = trace.trace_id;
    record.span_id = trace.span_id;
    if (outcome.result) {
      record.status = outcome.result->status;
    } else {
      record.error = outcome.result.error().kind();
      record.error_message = outcome.result.error().message();
    }
    // With several endpoints, which one carried it, and whether it failed
    // once too often there.
    if (attempt.span != nullptr && outcome.endpoint) {
      attempt.span->SetAttribute({"network.peer.address", outcome.endpoint->name()});
      if (outcome.ejected_endpoint) {
        const telemetry::KeyValue ejected[] = {{"network.peer.address", outcome.endpoint->name()}};
        attempt.span->AddEvent("outbound.endpoint.ejected", outcome.ended, ejected);
      }
    }
    // The retry loop decides before the span ends, so the span says why.
    if (attempt.owner != nullptr) attempt.owner->Decide(outcome);
    if (attempt.span != nullptr && attempt.hedge) {
      attempt.span->SetAttribute({"outbound.attempt.hedge", true});
    }
    if (attempt.span != nullptr && record.decision) {
      attempt.span->SetAttribute({"outbound.retry.reason", retry::ToString(record.reason)});
      if (record.reason.kind == retry::ReasonKind::kRejected) {
        attempt.span->SetAttribute(
            {"outbound.retry.rejected_by", retry::ToString(record.reason.by)});
      }
    }
    telemetry_.AttemptEnded(attempt, outcome, attempt.slot(in_queue_));
  }

 private:
  AttemptSlots::Index<std::optional<Duration>> in_queue_;
  const ClientTelemetry& telemetry_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeAttemptSpan(AttemptSlots& slots,
                                              const ClientTelemetry& telemetry) {
  return std::make_unique<AttemptSpan>(slots, telemetry);
}

}  // namespace outbound::http::internal
