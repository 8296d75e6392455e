// SPDX-License-Identifier: Apache-2.0
// gRPC's grpc-timeout header: at most 8 digits and a unit, H (hours), M
// (minutes), S (seconds), m (milliseconds), u (microseconds) or n
// (nanoseconds). Pure functions, no I/O. Internal: the gRPC front end's
// (encoding) and the test kit's fake server's (decoding).
//
//   headers.emplace_back("grpc-timeout", EncodeTimeout(deadline - clock.Now()));
#ifndef OUTBOUND_SRC_RPC_WIRE_TIMEOUT_H_
#define OUTBOUND_SRC_RPC_WIRE_TIMEOUT_H_

#include <optional>
#include <string>
#include <string_view>

#include "outbound/clock.h"

namespace outbound::rpc::internal {

// `timeout` in the smallest unit whose count fits in 8 digits, the count
// rounded up, so the server's deadline is never earlier than the caller's
// and a positive remainder never encodes as "0" (which a server fails at
// once): 1500ms is "1500000u", 100000000ns is "100000u", 1ns is "1n".
// The floor is "1n": a zero or negative timeout encodes as "1n" (the caller
// ends such a call before sending it, so this is never on the wire).
std::string EncodeTimeout(Duration timeout);

// A grpc-timeout value: 1 to 8 ASCII digits ("0" included) and one unit,
// nothing else (no sign, no space). nullopt for anything else. A value past
// what Duration holds (over about 2.5 million hours) is Duration::max().
std::optional<Duration> DecodeTimeout(std::string_view value);

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_WIRE_TIMEOUT_H_
