// SPDX-License-Identifier: Apache-2.0
// outbound/internal/fault_scenario.h
//
// The failure-injection scenario a call's baggage carries
// (docs/failure-injection.md), read the same way by the HTTP and the gRPC
// client. Not public API.
#ifndef OUTBOUND_INTERNAL_FAULT_SCENARIO_H_
#define OUTBOUND_INTERNAL_FAULT_SCENARIO_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "outbound/clock.h"
#include "outbound/error.h"

namespace outbound::internal {

// The baggage member that carries a scenario.
inline constexpr std::string_view kFaultBaggageKey = "outbound-fault";

// What a scenario does to one injection point's attempts.
struct InjectedFault {
  enum class Kind { kAbort, kDelay, kStatus };
  Kind kind = Kind::kAbort;
  Duration delay{0};  // kDelay
  int status = 0;     // kStatus: an HTTP status (the gRPC client maps it)
  // kStatus: the answer's Retry-After, in seconds (none: no such header).
  std::optional<std::uint32_t> retry_after;
  double probability = 1.0;  // of each attempt, 0 to 1
};

// The longest Retry-After a scenario may ask for: a day.
inline constexpr std::uint32_t kMaxInjectedRetryAfterSeconds = 86400;

// The fault `scenario` holds for `point` ("http:payments:8443"), none if it
// names another point only; kInvalidRequest if any of its rules is
// malformed (the whole scenario is then ignored). Points are compared
// without regard to case ("HTTP:Payments:8443" is the same point); the
// actions and options are lower-case.
//
//   scenario = rule *(";" rule)
//   rule     = point "=" action *("," option)
//   action   = "abort" | "delay:" n ("ms" | "s") | "status:" 3DIGIT
//   option   = percent "%"             (default 100%)
//            | "retry-after:" seconds  (with a status only; at most a day)
Result<std::optional<InjectedFault>> ParseFaultScenario(std::string_view scenario,
                                                        std::string_view point);

}  // namespace outbound::internal

#endif  // OUTBOUND_INTERNAL_FAULT_SCENARIO_H_
