// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/breaker_record.h"

#include <string>

namespace outbound::telemetry {

LogRecord BreakerTransitionRecord(std::string_view scope, std::string_view host, std::int64_t port,
                                  const circuit::Transition& transition, const SpanContext* cause) {
  LogRecord record;
  record.scope = std::string(scope);
  record.at = transition.at;
  record.severity = transition.to == circuit::State::kOpen ? Severity::kWarn : Severity::kInfo;
  record.body = "circuit breaker " + std::string(circuit::ToString(transition.to));
  if (transition.forced) record.body += " (operator override)";
  const circuit::Counts& counts = transition.counts;
  const KeyValue attributes[] = {
      {"server.address", host},
      {"server.port", port},
      {"outbound.circuit.previous_state", circuit::ToString(transition.from)},
      {"outbound.circuit.successes", std::int64_t{counts.successes}},
      {"outbound.circuit.failures", std::int64_t{counts.failures}},
      {"outbound.circuit.consecutive_successes", std::int64_t{counts.consecutive_successes}},
      {"outbound.circuit.consecutive_failures", std::int64_t{counts.consecutive_failures}},
      {"outbound.circuit.timed_out", std::int64_t{counts.timed_out}},
  };
  record.attributes = Own(attributes);
  if (transition.forced) {
    record.attributes.push_back(Own(KeyValue{"outbound.circuit.forced", true}));
  }
  if (cause != nullptr && cause->valid()) record.trace = *cause;
  return record;
}

LogRecord BreakerOverrideRecord(std::string_view scope, std::string_view host, std::int64_t port,
                                circuit::Override override, circuit::Hold before, TimePoint at) {
  LogRecord record;
  record.scope = std::string(scope);
  record.at = at;
  record.severity = Severity::kWarn;
  record.body = "circuit breaker override: " + std::string(circuit::ToString(override));
  const KeyValue attributes[] = {
      {"server.address", host},
      {"server.port", port},
      {"outbound.circuit.override", circuit::ToString(override)},
      {"outbound.circuit.previous_hold", circuit::ToString(before)},
  };
  record.attributes = Own(attributes);
  return record;
}

}  // namespace outbound::telemetry
