// SPDX-License-Identifier: Apache-2.0
// The native connection pool: the carrier (../carrier.h) under the
// client's dispatcher, on the client's event loop. It decides which
// connection carries each exchange the dispatcher hands it, and how many
// connections there are:
//  - HTTP/2: one connection while the server's MAX_CONCURRENT_STREAMS
//    allows; another only when every open one is full (or going away) and
//    none is being opened; up to max_connections;
//  - HTTP/1.1: one attempt per connection at a time; an idle reusable
//    connection first, otherwise a new one, up to max_connections;
//  - over TLS the protocol is known once the first handshake ends: until
//    then one connection is opened, as for HTTP/2;
//  - a connection that can no longer be trusted (an error, a cut attempt
//    on HTTP/1.1, bytes nobody asked for) is closed, never reused;
//  - an idle HTTP/1.1 connection whose server gave a Keep-Alive timeout is
//    closed a margin before it (H1Exchange), not chosen as the server
//    closes it;
//  - with Settings::max_connection_age, a connection past its age (drawn
//    within ±10 % per connection) is drained, as after a server's GOAWAY:
//    no new exchange, what it carries finishes, closed once idle.
// Names are resolved off the loop (resolver.h, started only when the
// Network says "resolve it as usual" for a name).
// Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_POOL_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_POOL_H_

#include <functional>
#include <memory>

#include "../carrier.h"
#include "../event_loop.h"
#include "../origin.h"
#include "../transport_spec.h"
#include "outbound/http/settings.h"
#include "outbound/runtime.h"

namespace outbound::http::internal {

// What makes the native pool under a client's dispatcher (Dispatcher's
// MakeCarrier). kInvalidSettings if the TLS material is unreadable.
[[nodiscard]] Result<std::function<std::unique_ptr<Carrier>(CarrierEvents&)>> NativePoolFor(
    const TransportSpec& spec, std::shared_ptr<EventLoop> loop);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_POOL_H_
