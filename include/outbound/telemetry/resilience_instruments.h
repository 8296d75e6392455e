// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/resilience_instruments.h
//
// The library's own instruments of one client, the same for the HTTP and
// the gRPC client, each under its own scope:
//
//   outbound.circuit.state         gauge, 1 for the breaker's state, 0 for the others:
//                                  an operator's hold is a state of its own,
//                                  forced-closed or isolated
//   outbound.circuit.overrides     counter, operators' overrides, by override
//   outbound.circuit.transitions   counter, by new state; every state's series from 0
//   outbound.circuit.calls         counter, attempts the breaker counted, by outcome
//                                  ("rejected" for a call it turned away)
//   outbound.retry.decisions       counter, what the retry loop decided, by decision
//                                  and by reason
//   outbound.retry.budget.tokens   gauge, tokens left in the retry budget
//   outbound.concurrency.limit     gauge, the adaptive concurrency limit (calls in
//                                  flight), when the client has one
//
// each with the dependency's server.address and server.port; and one log
// record per change of the breaker's state (BreakerTransitionRecord), in
// the trace of the call that caused it, and one per operator's override or
// switch of a setting. Each signal costs nothing without
// its provider.
#ifndef OUTBOUND_TELEMETRY_RESILIENCE_INSTRUMENTS_H_
#define OUTBOUND_TELEMETRY_RESILIENCE_INSTRUMENTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "outbound/circuit/breaker.h"
#include "outbound/clock.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/retrier.h"
#include "outbound/telemetry/telemetry.h"

namespace outbound::telemetry {

class ResilienceInstruments {
 public:
  // `scope` names the client's instrumentation scope and must outlive the
  // instruments (a constant). Every state's transition series exists from
  // here, at 0, so that Prometheus's increase() sees the first opening.
  ResilienceInstruments(const Telemetry& telemetry, std::string_view scope, std::string host,
                        std::int64_t port);
  ~ResilienceInstruments();
  ResilienceInstruments(const ResilienceInstruments&) = delete;
  ResilienceInstruments& operator=(const ResilienceInstruments&) = delete;

  // Registers the gauges, which read `breaker` (on `clock`) and `budget` at
  // collection. All three outlive the instruments.
  void Observe(circuit::Breaker& breaker, const retry::Budget& budget, const Clock& clock);

  // Registers outbound.concurrency.limit, which calls `limit` at
  // collection until the registration returned is destroyed (null
  // without meters).
  [[nodiscard]] std::unique_ptr<GaugeRegistration> ObserveConcurrencyLimit(
      std::function<double()> limit) const;

  // The breaker counted an attempt (circuit::ToString of its outcome), or
  // rejected a call ("rejected").
  void BreakerCounted(std::string_view outcome) const;
  // The retry loop decided what follows an attempt, and why.
  void RetryDecided(retry::DecisionKind decision, retry::Reason reason) const;
  // An operator overrode the breaker (the hold before it: `before`), at
  // `at`: counted, and logged (BreakerOverrideRecord).
  void BreakerOverridden(circuit::Override override, circuit::Hold before, TimePoint at) const;
  // An operator switched one of the client's settings without a restart
  // (http::Client::SetFaults, SetRateLimit): `setting` ("faults",
  // "rate_limit") is `value` ("on", "50/s,10", "off") from `at`. Logged at
  // WARN, as a breaker override is: the client no longer runs as created.
  void SettingSwitched(std::string_view setting, std::string_view value, TimePoint at) const;
  // The breaker changed state, caused by the call whose trace is `cause`
  // (null when none): counted, and logged in that trace.
  void BreakerTransition(const circuit::Transition& transition, const SpanContext* cause) const;

 private:
  // The counters' series a client adds to on every call, each bound the
  // first time it is used.
  struct Bound;

  const Telemetry telemetry_;
  const std::string_view scope_;
  const std::string host_;
  const std::int64_t port_;
  std::shared_ptr<Counter> transitions_;
  std::shared_ptr<Counter> calls_;
  std::shared_ptr<Counter> decisions_;
  std::shared_ptr<Counter> overrides_;
  std::unique_ptr<GaugeRegistration> state_gauge_;
  std::unique_ptr<GaugeRegistration> tokens_gauge_;
  std::unique_ptr<Bound> bound_;
};

// The trace of the call whose breaker step (Allow, Settle) runs on this
// thread, for the log record of a transition that step causes: the
// breaker's transition callback has no call of its own to ask.
class TransitionCause {
 public:
  explicit TransitionCause(const SpanContext* cause);
  ~TransitionCause();
  TransitionCause(const TransitionCause&) = delete;
  TransitionCause& operator=(const TransitionCause&) = delete;

  // The innermost cause set on this thread; null when none.
  static const SpanContext* current();

 private:
  const SpanContext* previous_;
};

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_RESILIENCE_INSTRUMENTS_H_
