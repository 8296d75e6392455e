// SPDX-License-Identifier: Apache-2.0
// OutlierDetection: with several endpoints (Settings::balancing), tells the
// endpoint that carried each attempt how it went, so one that keeps
// failing is ejected while the others serve. (That a call's next attempt
// goes elsewhere is the pool's: ExchangeRequest::call_endpoint.) A failure is what the classify
// layer below calls one for the breaker, or a refused stream; a loss another attempt on the same
// connection already counted is not counted again. A failure that ejects the endpoint, or comes
// from one already out, is the endpoint's alone: the breaker above does not count it, so one
// replica failing fast among healthy ones does not open the breaker for all of them.
#include "endpoint_health.h"
#include "layers.h"

namespace outbound::http::internal {
namespace {

class OutlierDetectionLayer final : public AttemptLayer {
 public:
  explicit OutlierDetectionLayer(const ClientTelemetry& telemetry) : telemetry_(telemetry) {}

  std::string_view name() const override { return "outlier detection"; }

  void Start(Attempt& attempt) override { attempt.Proceed(*this); }

  void Finish(Attempt&, AttemptOutcome& outcome) override {
    if (!outcome.endpoint) return;  // never carried
    if (outcome.collateral || !outcome.classification) return;
    // A refused stream is no failure of the dependency's (the breaker
    // ignores it: it goes again at once), but an endpoint that refuses
    // every one serves nothing.
    bool refused = outcome.unprocessed && !outcome.connection_retired;
    circuit::Outcome verdict = outcome.classification->breaker;
    // What the breaker ignores (a cancel, a hedge that lost, this
    // process's own error) says nothing of the endpoint: it neither adds
    // to a run of failures nor ends one.
    if (!refused && verdict == circuit::Outcome::kIgnored) return;
    bool failed = refused || verdict == circuit::Outcome::kFailure;
    EndpointHealth::Reported reported = outcome.endpoint->Report(failed, outcome.ended);
    if (reported.ejected_for) {
      outcome.ejected_endpoint = true;
      telemetry_.EndpointEjected(outcome.endpoint->name(), *reported.ejected_for);
    }
    // Only while another endpoint serves: with every one out (a
    // max_ejected_share of 1), the failures are the dependency's.
    outcome.endpoint_took_failure = failed && reported.out && reported.others_serve;
  }

 private:
  const ClientTelemetry& telemetry_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeOutlierDetection(const ClientTelemetry& telemetry) {
  return std::make_unique<OutlierDetectionLayer>(telemetry);
}

}  // namespace outbound::http::internal
