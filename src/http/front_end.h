// SPDX-License-Identifier: Apache-2.0
// What a front end on the call core says of its protocol beyond what an
// HTTP exchange is. The HTTP client is the core's first front end and
// needs nothing here; the gRPC client (src/rpc/) makes its calls through an
// http::Client built with its own: its failure injection point, no
// redirects, its spans and metrics, and its attempt layers (the
// grpc-timeout each attempt sends). Internal.
#ifndef OUTBOUND_SRC_HTTP_FRONT_END_H_
#define OUTBOUND_SRC_HTTP_FRONT_END_H_

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "attempt.h"
#include "client_telemetry.h"
#include "layers.h"
#include "origin.h"
#include "outbound/http/client.h"
#include "transport_spec.h"

namespace outbound::http::internal {

struct FrontEnd {
  // The scheme of the client's failure injection point: "grpc" names it
  // "grpc:<host>:<port>".
  std::string_view fault_scheme = "http";
  // What an injected "status:NNN" answers; empty: HTTP's response.
  InjectedAnswer injected_answer;
  // Whether the call path follows redirects (gRPC has none).
  bool redirects = true;
  // Whether the dependency must speak HTTP/2 (gRPC): over TLS, ALPN offers
  // h2 alone, and a handshake that does not choose it fails the connection
  // (kTransport, saying so) rather than carry calls over HTTP/1.1.
  bool http2_only = false;
  // Whether an answer's body is the caller's, told its head: one that is
  // not is read and dropped, neither kept nor streamed, and held to
  // Settings::max_error_response_bytes rather than max_response_bytes
  // (gRPC's: an answer that is not gRPC's, a proxy's error page, says all
  // it says in its status). Null: every body is.
  BodyWanted body_wanted = nullptr;
  // Whether each attempt has Settings::attempt_timeout for its headers (a
  // route's own attempt_timeout applies either way). gRPC's attempt has
  // the call's time left, which the server is told (grpc-timeout), unless
  // rpc::Settings::attempt_timeout, or its method's, asks for less.
  bool attempt_timeout = true;
  // The client's telemetry; empty: HTTP's.
  std::function<std::unique_ptr<ClientTelemetry>(const telemetry::Telemetry&, const Origin&,
                                                 Clock&)>
      telemetry;
  // Adds the front end's own attempt layers, which go last before the
  // transport (below failure injection, so a delayed attempt's layers see
  // the time it has left after the delay).
  std::function<void(AttemptSlots& slots, Clock& clock,
                     std::vector<std::unique_ptr<AttemptLayer>>& layers)>
      attempt_layers;
};

// Client::Create for a front end: the same call path, with `front_end`'s
// parts in it.
[[nodiscard]] Result<std::unique_ptr<Client>> CreateClient(const Runtime& runtime,
                                                           Settings settings,
                                                           const FrontEnd& front_end);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_FRONT_END_H_
