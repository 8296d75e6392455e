// SPDX-License-Identifier: Apache-2.0
// gRPC metadata on HTTP/2: binary values (keys ending in "-bin") carried
// as base64, and the metadata a caller sees out of an answer's header or
// trailer fields. Pure functions, no I/O. Internal: the gRPC front end's
// and the kit's fake gRPC server's.
//
//   Trailers trailers = MetadataOf(response.headers);  // "-bin" values decoded
#ifndef OUTBOUND_SRC_RPC_WIRE_METADATA_H_
#define OUTBOUND_SRC_RPC_WIRE_METADATA_H_

#include <optional>
#include <string>
#include <string_view>

#include "outbound/context.h"
#include "outbound/http/message.h"
#include "outbound/internal/ascii.h"
#include "outbound/rpc/settings.h"

namespace outbound::rpc::internal {

// Field names, metadata keys and encodings compare as ASCII, without case.
using outbound::internal::EqualsIgnoringAsciiCase;

// The value of the first of `fields` named `lower` (without case), or
// nullopt: unlike ResponseHeaders::Find, it tells an absent field from an
// empty one.
std::optional<std::string_view> FindField(const http::ResponseHeaders& fields,
                                          std::string_view lower);

// Whether `key` names binary metadata: it ends in "-bin" (any case).
bool IsBinaryKey(std::string_view key);

// `bytes` in base64 (RFC 4648 §4, '+' and '/') without '=' padding, as
// gRPC sends binary values.
std::string EncodeBinaryValue(std::string_view bytes);

// A binary value's bytes, from base64 with or without '=' padding (the
// protocol requires both be taken). nullopt when it is not base64: a byte
// outside the alphabet (spaces included), '=' anywhere but the end, a
// padded value whose length is not a multiple of 4, or a length that
// leaves one character over (no bytes are 1 character long). Leftover bits
// of the last character that are not zero are ignored, as most decoders do.
std::optional<std::string> DecodeBinaryValue(std::string_view base64);

// Appends a call's request metadata (Context::metadata) to `fields` as
// gRPC sends it: each name in lower case, a "-bin" name's value
// base64-coded. INTERNAL, naming the entry, for the first one gRPC does
// not allow, and then nothing is appended: an empty name, or one of other
// than ASCII letters, digits, '-', '_' and '.'; a name gRPC reserves
// ("grpc-" anything, content-type, te); a text value with a byte outside
// printable ASCII (0x20-0x7E). Connection-specific names (connection,
// host...) are left to the call core's own check of request fields.
Status AppendRequestMetadata(const Metadata& metadata, http::Headers& fields);

// The metadata a caller sees from an answer's fields (its trailers, or its
// headers when the answer is Trailers-Only), names lower-cased:
//   - left out: pseudo-headers (":status"), content-type, and the fields
//     the wire functions read for the caller: grpc-status, grpc-message,
//     grpc-encoding, grpc-accept-encoding;
//   - kept: every other field, grpc-status-details-bin and
//     grpc-retry-pushback-ms included (the caller's classify reads them);
//   - a "-bin" value is decoded to its bytes; one joined with ',' (as a
//     proxy may join repeated fields) gives one entry per part; a part that
//     is not base64 is left out, for it cannot be shown as the bytes it
//     should be.
Trailers MetadataOf(const http::ResponseHeaders& fields);

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_WIRE_METADATA_H_
