// SPDX-License-Identifier: Apache-2.0
// The gRPC client's parts of the call core (http::internal::FrontEnd): its
// failure injection point ("grpc:<host>:<port>"), no redirects, its spans
// and per-attempt metrics in OpenTelemetry's RPC vocabulary, and the
// grpc-timeout each attempt sends. Internal.
#ifndef OUTBOUND_SRC_RPC_FRONT_END_H_
#define OUTBOUND_SRC_RPC_FRONT_END_H_

#include "../http/front_end.h"

namespace outbound::rpc::internal {

http::internal::FrontEnd GrpcFrontEnd();

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_FRONT_END_H_
