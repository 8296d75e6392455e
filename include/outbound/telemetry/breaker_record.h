// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/breaker_record.h
//
// The log record every client writes when its circuit breaker changes
// state: "circuit breaker open" at WARN, "... half-open" and "... closed" at
// INFO, with the dependency's server.address and server.port, the state
// left as outbound.circuit.previous_state, and that state's counts (and
// outbound.circuit.forced when an operator's override made the change); and
// the record of each override itself. One function each, so the HTTP and
// gRPC clients write the same records.
#ifndef OUTBOUND_TELEMETRY_BREAKER_RECORD_H_
#define OUTBOUND_TELEMETRY_BREAKER_RECORD_H_

#include <cstdint>
#include <string_view>

#include "outbound/circuit/breaker.h"
#include "outbound/telemetry/log.h"

namespace outbound::telemetry {

// `cause`: the trace of the call that made the change; null or invalid for none.
LogRecord BreakerTransitionRecord(std::string_view scope, std::string_view host, std::int64_t port,
                                  const circuit::Transition& transition, const SpanContext* cause);

// "circuit breaker override: isolate" at WARN, with server.address,
// server.port, outbound.circuit.override and outbound.circuit.previous_hold.
LogRecord BreakerOverrideRecord(std::string_view scope, std::string_view host, std::int64_t port,
                                circuit::Override override, circuit::Hold before, TimePoint at);

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_BREAKER_RECORD_H_
