// SPDX-License-Identifier: Apache-2.0
// The gRPC client's parts of the call core (http::internal::FrontEnd): its
// failure injection point ("grpc:<host>:<port>"), no redirects, its spans
// and per-attempt metrics in OpenTelemetry's RPC vocabulary, and the
// grpc-timeout each attempt sends; with `attempt_timeout`
// (rpc::Settings::attempt_timeout), the core's attempt timeout, whose cut
// attempt ends UNAVAILABLE (a method's own, rpc::Settings::methods, applies
// either way). Internal.
#ifndef OUTBOUND_SRC_RPC_FRONT_END_H_
#define OUTBOUND_SRC_RPC_FRONT_END_H_

#include <cstddef>
#include <optional>

#include "../http/front_end.h"
#include "outbound/clock.h"

namespace outbound::rpc::internal {

// `receive_limit` (rpc::Settings::max_receive_message_bytes): the
// telemetry hears each attempt's status as its caller would (AttemptStatusOf).
http::internal::FrontEnd GrpcFrontEnd(const std::optional<Duration>& attempt_timeout,
                                      std::size_t receive_limit);

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_FRONT_END_H_
