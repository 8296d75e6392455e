// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/resilience_instruments.h"

#include <array>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "outbound/telemetry/breaker_record.h"

namespace outbound::telemetry {
namespace {

constexpr circuit::State kStates[] = {circuit::State::kClosed, circuit::State::kOpen,
                                      circuit::State::kHalfOpen};
constexpr circuit::Hold kHolds[] = {circuit::Hold::kForcedClosed, circuit::Hold::kIsolated};
constexpr circuit::Override kOverrides[] = {
    circuit::Override::kForceOpen, circuit::Override::kForceClosed, circuit::Override::kIsolate,
    circuit::Override::kRelease};

thread_local const SpanContext* t_cause = nullptr;

}  // namespace

struct ResilienceInstruments::Bound {
  static constexpr std::size_t kDecisions =
      static_cast<std::size_t>(retry::DecisionKind::kRetryAfterTooLong) + 1;
  static constexpr std::size_t kReasons =
      static_cast<std::size_t>(retry::ReasonKind::kHedgeInFlight) + 1;
  static constexpr std::array<std::string_view, 4> kOutcomes = {"success", "failure", "ignored",
                                                                "rejected"};

  // The slot's series, bound now if it has none yet.
  BoundCounter& In(std::atomic<BoundCounter*>& slot, Counter& counter,
                   std::span<const KeyValue> attributes) {
    if (BoundCounter* known = slot.load(std::memory_order_acquire)) return *known;
    std::lock_guard lock(mu);
    if (BoundCounter* known = slot.load(std::memory_order_relaxed)) return *known;
    owned.push_back(counter.BindCounter(attributes));
    slot.store(owned.back().get(), std::memory_order_release);
    return *owned.back();
  }

  std::array<std::atomic<BoundCounter*>, kDecisions * kReasons> decisions{};
  std::array<std::atomic<BoundCounter*>, kOutcomes.size()> calls{};
  std::mutex mu;
  std::vector<std::unique_ptr<BoundCounter>> owned;
};

ResilienceInstruments::ResilienceInstruments(const Telemetry& telemetry, std::string_view scope,
                                             std::string host, std::int64_t port)
    : telemetry_(telemetry), scope_(scope), host_(std::move(host)), port_(port) {
  MeterProvider* meters = telemetry_.meters;
  if (meters == nullptr) return;
  bound_ = std::make_unique<Bound>();
  transitions_ = meters->CreateCounter({scope_, "outbound.circuit.transitions", "{transition}",
                                        "Changes of a circuit breaker's state, by new state."});
  calls_ = meters->CreateCounter({scope_, "outbound.circuit.calls", "{call}",
                                  "Attempts a circuit breaker counted, by outcome."});
  decisions_ = meters->CreateCounter({scope_, "outbound.retry.decisions", "{decision}",
                                      "What the retry loop decided after each attempt."});
  overrides_ = meters->CreateCounter({scope_, "outbound.circuit.overrides", "{override}",
                                      "Operators' overrides of a circuit breaker, by override."});
  for (circuit::State state : kStates) {
    const KeyValue attributes[] = {
        {"server.address", host_}, {"server.port", port_}, {"state", circuit::ToString(state)}};
    transitions_->Add(0, attributes);
  }
  for (circuit::Override override : kOverrides) {
    const KeyValue attributes[] = {{"override", circuit::ToString(override)},
                                   {"server.address", host_},
                                   {"server.port", port_}};
    overrides_->Add(0, attributes);
  }
}

ResilienceInstruments::~ResilienceInstruments() = default;

void ResilienceInstruments::Observe(circuit::Breaker& breaker, const retry::Budget& budget,
                                    const Clock& clock) {
  MeterProvider* meters = telemetry_.meters;
  if (meters == nullptr) return;
  state_gauge_ = meters->AddObservableGauge(
      {scope_, "outbound.circuit.state", "{breaker}", "Circuit breakers in each state."},
      [this, &breaker, &clock](Observations& out) {
        circuit::State now = breaker.state(clock.Now());
        circuit::Hold hold = breaker.hold();
        for (circuit::State state : kStates) {
          const KeyValue attributes[] = {{"server.address", host_},
                                         {"server.port", port_},
                                         {"state", circuit::ToString(state)}};
          out.Observe(hold == circuit::Hold::kNone && state == now ? 1 : 0, attributes);
        }
        for (circuit::Hold held : kHolds) {
          const KeyValue attributes[] = {{"server.address", host_},
                                         {"server.port", port_},
                                         {"state", circuit::ToString(held)}};
          out.Observe(held == hold ? 1 : 0, attributes);
        }
      });
  tokens_gauge_ = meters->AddObservableGauge(
      {scope_, "outbound.retry.budget.tokens", "{token}",
       "Tokens left in a client's retry budget; retries stop at half."},
      [this, &budget](Observations& out) {
        const KeyValue attributes[] = {{"server.address", host_}, {"server.port", port_}};
        out.Observe(budget.tokens(), attributes);
      });
}

std::unique_ptr<GaugeRegistration> ResilienceInstruments::ObserveConcurrencyLimit(
    std::function<double()> limit) const {
  MeterProvider* meters = telemetry_.meters;
  if (meters == nullptr) return nullptr;
  return meters->AddObservableGauge(
      {scope_, "outbound.concurrency.limit", "{call}",
       "A client's adaptive concurrency limit: the calls it lets in flight at once."},
      [this, limit = std::move(limit)](Observations& out) {
        const KeyValue attributes[] = {{"server.address", host_}, {"server.port", port_}};
        out.Observe(limit(), attributes);
      });
}

void ResilienceInstruments::BreakerCounted(std::string_view outcome) const {
  if (calls_ == nullptr) return;
  const KeyValue attributes[] = {
      {"outcome", outcome}, {"server.address", host_}, {"server.port", port_}};
  for (std::size_t i = 0; i < Bound::kOutcomes.size(); ++i) {
    if (Bound::kOutcomes[i] == outcome) {
      return bound_->In(bound_->calls[i], *calls_, attributes).Add(1);
    }
  }
  calls_->Add(1, attributes);
}

void ResilienceInstruments::RetryDecided(retry::DecisionKind decision, retry::Reason reason) const {
  if (decisions_ == nullptr) return;
  // In the order of their keys, which is the order a store files them in.
  const KeyValue attributes[] = {{"decision", retry::ToString(decision)},
                                 {"reason", retry::ToString(reason)},
                                 {"server.address", host_},
                                 {"server.port", port_}};
  auto d = static_cast<std::size_t>(decision);
  auto r = static_cast<std::size_t>(reason.kind);
  if (d < Bound::kDecisions && r < Bound::kReasons) {
    return bound_->In(bound_->decisions[d * Bound::kReasons + r], *decisions_, attributes).Add(1);
  }
  decisions_->Add(1, attributes);
}

void ResilienceInstruments::BreakerOverridden(circuit::Override override, circuit::Hold before,
                                              TimePoint at) const {
  if (overrides_ != nullptr) {
    const KeyValue attributes[] = {{"override", circuit::ToString(override)},
                                   {"server.address", host_},
                                   {"server.port", port_}};
    overrides_->Add(1, attributes);
  }
  if (telemetry_.logger == nullptr) return;
  telemetry_.logger->Emit(BreakerOverrideRecord(scope_, host_, port_, override, before, at));
}

void ResilienceInstruments::SettingSwitched(std::string_view setting, std::string_view value,
                                            TimePoint at) const {
  if (telemetry_.logger == nullptr) return;
  LogRecord record;
  record.scope = std::string(scope_);
  record.at = at;
  record.severity = Severity::kWarn;
  record.body = "setting switched: " + std::string(setting) + " " + std::string(value);
  const KeyValue attributes[] = {
      {"server.address", host_},
      {"server.port", port_},
      {"outbound.setting", setting},
      {"outbound.setting.value", value},
  };
  record.attributes = Own(attributes);
  telemetry_.logger->Emit(std::move(record));
}

void ResilienceInstruments::BreakerTransition(const circuit::Transition& transition,
                                              const SpanContext* cause) const {
  if (transitions_ != nullptr) {
    const KeyValue attributes[] = {{"server.address", host_},
                                   {"server.port", port_},
                                   {"state", circuit::ToString(transition.to)}};
    transitions_->Add(1, attributes);
  }
  if (telemetry_.logger == nullptr) return;
  telemetry_.logger->Emit(BreakerTransitionRecord(scope_, host_, port_, transition, cause));
}

TransitionCause::TransitionCause(const SpanContext* cause) : previous_(t_cause) { t_cause = cause; }
TransitionCause::~TransitionCause() { t_cause = previous_; }
const SpanContext* TransitionCause::current() { return t_cause; }

}  // namespace outbound::telemetry
