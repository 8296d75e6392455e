// SPDX-License-Identifier: Apache-2.0
// How a gRPC call rides on the call core: the HTTP/2 request a call
// sends, the gRPC status an answer or an error means, and the client's
// classify as the core's. gRPC is HTTP/2 with length-prefixed messages and
// its status in trailers; everything else (deadline, retries, breaker,
// budget, failure injection, telemetry's shape) is the core's. Internal.
#ifndef OUTBOUND_SRC_RPC_EXCHANGE_H_
#define OUTBOUND_SRC_RPC_EXCHANGE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/context.h"
#include "outbound/http/classify.h"
#include "outbound/http/message.h"
#include "outbound/http/settings.h"
#include "outbound/rpc/client.h"
#include "outbound/rpc/settings.h"
#include "wire/framing.h"
#include "wire/status.h"

namespace outbound::rpc::internal {

// The request of a call: a POST to the method's path ("/pkg.Service/Method";
// the server answers UNIMPLEMENTED for one it does not have) with gRPC's
// headers (content-type, te) and the context's metadata
// (AppendRequestMetadata, whose INTERNAL it gives back). With
// `accept_gzip`, grpc-accept-encoding says a gzip-coded answer is welcome.
StatusOr<http::Request> CallRequest(std::string_view method, const Context& context,
                                    bool accept_gzip);

// The request of a call that sends one message: CallRequest's, `message`
// framed (gzip-coded with `gzip`), or RESOURCE_EXHAUSTED when `message` is
// over `send_limit` bytes (CallRequest's INTERNAL for bad metadata).
StatusOr<http::Request> MessageRequest(std::string_view method, std::string_view message,
                                       const Context& context, std::size_t send_limit, bool gzip,
                                       bool accept_gzip = true);

// The status of one attempt or call: from its answer (its trailers, or
// its headers when it is trailers-only; an HTTP status other than 200 by
// gRPC's mapping), or from the core's error (a deadline, a cancellation, a
// rejection, a lost connection).
Status StatusOf(const Result<http::Response>& result);

// The answer's trailing metadata, names in lower case, without the
// status fields gRPC reserves: its trailers, or its headers when it is
// trailers-only.
Trailers TrailersOf(const http::Response& response);

// The answer's initial metadata, as TrailersOf has the trailing: none for
// a Trailers-Only answer, whose headers are its trailers.
Metadata HeadersOf(const http::Response& response);

// The method an attempt called, from its URL's path: "/pkg.Service/Method".
std::string_view MethodOf(std::string_view url);

// The status of one attempt as its caller would hear it, for classify,
// the span and the metrics: StatusOf, and under OK a unary answer's (its
// body not streamed to a sink) framing as ReplyOf reads it, by the
// prefixes alone: one message, whose flag and encoding the client can
// decode, announced within `receive_limit`. (A gzip body that does not
// inflate is found by ReplyOf alone: nothing is inflated here.)
Status AttemptStatusOf(const Result<http::Response>& result, bool body_streams,
                       std::size_t receive_limit);

// `classify` as the call core runs it for every attempt, told
// AttemptStatusOf's status.
http::Classify CoreClassify(Classify classify, std::size_t receive_limit);

// The methods' policies as the call core's routes: a method's path is the
// route's prefix (a service's "/pkg.Service/" holds its methods).
std::vector<http::RoutePolicy> CoreRoutes(const std::vector<MethodPolicy>& methods,
                                          std::size_t receive_limit);

// A streamed answer's body fed to `deframer`, as the call's BodySink: its
// end is checked too, and a message that breaks the framing ends the call
// with that failure, so the breaker, the span and the metrics see it as
// the caller does (RESOURCE_EXHAUSTED as kResponseTooLarge, anything else
// as kInvalidResponse, which StatusOf gives back as INTERNAL). The sink
// shares the Deframer: a call can end inside Feed (a message handler that
// cancels it), and the caller may then be gone while Feed returns.
http::BodySink DeframingSink(std::shared_ptr<Deframer> deframer);

// The head of a streamed answer told to `deframer`, as the call's
// BodyHeadSink: the messages are decoded by its grpc-encoding, and a body
// that is not gRPC's (a 200 with another content-type, or a 2xx but 200)
// is dropped rather than read as messages, so the call's status is the
// one its headers give (UNKNOWN), as for a unary call.
http::BodyHeadSink DeframingHead(std::shared_ptr<Deframer> deframer);

// The reply of a call that answers with one message: the call's status,
// the message when it is OK (exactly one, within `receive_limit`), the
// trailers and the attempts sent.
Reply ReplyOf(Result<http::Response> result, std::size_t receive_limit);

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_EXCHANGE_H_
