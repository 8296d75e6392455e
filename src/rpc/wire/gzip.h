// SPDX-License-Identifier: Apache-2.0
// The gzip coding of one gRPC message (grpc-encoding: gzip), both ways,
// whole messages at a time: each message is coded on its own (the protocol
// keeps no compression context across messages), and a message is held
// whole before it is handed on anyway. Internal: the wire's.
#ifndef OUTBOUND_SRC_RPC_WIRE_GZIP_H_
#define OUTBOUND_SRC_RPC_WIRE_GZIP_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "status.h"

namespace outbound::rpc::internal {

// `message` gzip-coded (one gzip member, zlib's default level). Fails only
// when zlib cannot have its state: INTERNAL.
[[nodiscard]] StatusOr<std::string> GzipCompress(std::string_view message);

// The bytes `coded` inflates to, gzip members back to back decoding as
// their concatenation (RFC 1952 §2.2). Never holds more than `limit` + 1
// decoded bytes: past `limit`, RESOURCE_EXHAUSTED ("the response message
// inflates to more than the receive limit of M bytes"). Not gzip, cut
// short, or followed by bytes that are not gzip: INTERNAL.
[[nodiscard]] StatusOr<std::string> GzipDecompress(std::string_view coded, std::size_t limit);

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_WIRE_GZIP_H_
