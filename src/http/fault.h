// SPDX-License-Identifier: Apache-2.0
// Failure injection: the scenario a call's baggage carries, and the attempt
// layer that acts on it. Internal; docs/failure-injection.md describes the
// format.
#ifndef OUTBOUND_SRC_HTTP_FAULT_H_
#define OUTBOUND_SRC_HTTP_FAULT_H_

#include "outbound/internal/fault_scenario.h"

namespace outbound::http::internal {

// The scenario's reading is outbound/internal/fault_scenario.h, shared
// with the gRPC client.
using outbound::internal::InjectedFault;
using outbound::internal::kFaultBaggageKey;
using outbound::internal::ParseFaultScenario;

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_FAULT_H_
