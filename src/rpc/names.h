// SPDX-License-Identifier: Apache-2.0
// What the gRPC client calls things in its telemetry: its instrumentation
// scope and the status codes' names. Internal.
#ifndef OUTBOUND_SRC_RPC_NAMES_H_
#define OUTBOUND_SRC_RPC_NAMES_H_

#include <iterator>
#include <string_view>

#include "outbound/rpc/settings.h"

namespace outbound::rpc::internal {

inline constexpr std::string_view kScope = "outbound.rpc";

inline std::string_view CodeName(Code code) {
  static constexpr std::string_view kNames[] = {"OK",
                                                "CANCELLED",
                                                "UNKNOWN",
                                                "INVALID_ARGUMENT",
                                                "DEADLINE_EXCEEDED",
                                                "NOT_FOUND",
                                                "ALREADY_EXISTS",
                                                "PERMISSION_DENIED",
                                                "RESOURCE_EXHAUSTED",
                                                "FAILED_PRECONDITION",
                                                "ABORTED",
                                                "OUT_OF_RANGE",
                                                "UNIMPLEMENTED",
                                                "INTERNAL",
                                                "UNAVAILABLE",
                                                "DATA_LOSS",
                                                "UNAUTHENTICATED"};
  auto i = static_cast<std::size_t>(code);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
}

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_NAMES_H_
