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

// The code's name as gRPC spells it (rpc::CodeName).
using rpc::CodeName;

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_NAMES_H_
