// SPDX-License-Identifier: Apache-2.0
// The call's status as gRPC carries it over HTTP/2 (doc/PROTOCOL-HTTP2.md
// and doc/http-grpc-status-mapping.md in grpc/grpc): grpc-status and
// grpc-message, the grpc-message percent-encoding, and the code an answer
// without grpc-status gets from its HTTP status. Pure functions, no I/O.
// Internal: the gRPC front end's.
//
//   Status status = StatusOfResponse(200, headers, trailers);
//   if (!status.ok()) return status;
//
// Every wire function that can fail says why as a Status, the value the
// call ends with, so the front end passes it on as it is.
#ifndef OUTBOUND_SRC_RPC_WIRE_STATUS_H_
#define OUTBOUND_SRC_RPC_WIRE_STATUS_H_

#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

#include "outbound/http/message.h"
#include "outbound/rpc/settings.h"

namespace outbound::rpc::internal {

// A value, or the non-OK Status the call ends with in its place.
template <typename T>
using StatusOr = tl::expected<T, Status>;

// Shorthand for the error side of a StatusOr.
inline tl::unexpected<Status> FailWith(Code code, std::string message) {
  return tl::unexpected<Status>(Status{code, std::move(message)});
}

// grpc-message's percent-encoding: every byte outside 0x20-0x7E, and '%',
// becomes %XX with upper-case hex digits; the rest stays. UTF-8 text is
// encoded byte by byte.
std::string EncodeStatusMessage(std::string_view message);

// The inverse, which never fails: %XX (hex digits in either case) becomes
// its byte, and a '%' not followed by two hex digits is kept as it is, so a
// malformed message still reaches the caller (the protocol forbids
// dropping it).
std::string DecodeStatusMessage(std::string_view encoded);

// The code gRPC gives an answer's HTTP status when the answer has no
// grpc-status: 400 and 431 INTERNAL, 401 UNAUTHENTICATED, 403
// PERMISSION_DENIED, 404 UNIMPLEMENTED, 429, 502, 503 and 504 UNAVAILABLE,
// anything else (200 included) UNKNOWN.
Code CodeForHttpStatus(int http_status);

// application/grpc, alone or followed by "+subtype" or by parameters, in
// any case.
bool IsGrpcContentType(std::string_view type);

// Whether an answer is gRPC's, its head known: status 200 and a gRPC
// content-type. Only such a body holds messages; another's (a proxy's
// error page, an HTML page under 200) is told by its status alone
// (StatusOfResponse).
bool IsGrpcAnswer(const http::Response& head);

// The call's status from the answer that came back, checked in this order:
//  1. an HTTP status other than 200: the answer's grpc-status and
//     grpc-message (as in 3 and 4) if it holds a valid one but OK (gRPC
//     says a grpc-status must be used; an error page is never OK); else
//     CodeForHttpStatus's code, message "HTTP status N",
//     followed by ": " and the decoded grpc-message when the answer had one
//     (a proxy's answer has none);
//  2. a content-type other than application/grpc, application/grpc+NAME or
//     application/grpc;PARAMS (any case): UNKNOWN, naming it;
//  3. grpc-status from `trailers`, or from `headers` when `trailers` is
//     empty (a Trailers-Only answer); none: INTERNAL "the answer had no
//     grpc-status"; a value that is not a code from 0 to 16 written as gRPC
//     writes it (decimal, no sign, no leading zero): UNKNOWN, naming it;
//  4. the message: grpc-message from the same fields as grpc-status,
//     percent-decoded; "" when absent.
// Header names compare in any case.
Status StatusOfResponse(int http_status, const http::ResponseHeaders& headers,
                        const http::ResponseHeaders& trailers);

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_WIRE_STATUS_H_
