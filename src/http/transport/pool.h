// SPDX-License-Identifier: Apache-2.0
// The native transport: the client's transport (client_transport.h) and
// its connection pool, on the client's event loop. It decides which connection
// each attempt goes on, and how many connections there are:
//  - attempts wait in one FIFO queue, oldest first; each is handed to a
//    connection (and counts as sent) only when one can carry it, after
//    asking whether its breaker still admits it;
//  - HTTP/2: one connection while the server's MAX_CONCURRENT_STREAMS
//    allows; another only when every open one is full (or going away) and
//    none is being opened; up to max_connections;
//  - HTTP/1.1: one attempt per connection at a time; an idle reusable
//    connection first, otherwise a new one, up to max_connections;
//  - over TLS the protocol is known once the first handshake ends: until
//    then one connection is opened, as for HTTP/2;
//  - a connection that can no longer be trusted (an error, a cut attempt
//    on HTTP/1.1, bytes nobody asked for) is closed, never reused;
//  - with no call in flight for 90 s (on the Runtime's clock) every
//    connection is closed.
// Names are resolved off the loop (a resolver thread of the transport's,
// started only when the Network says "resolve it as usual" for a name).
// Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_POOL_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_POOL_H_

#include <memory>

#include "../event_loop.h"
#include "../layers.h"
#include "../origin.h"
#include "outbound/runtime.h"

namespace outbound::http::internal {

// Builds the native transport. kInvalidSettings if the TLS material is
// unreadable. `pool` is set to the transport's connection pool, which
// lives as long as the transport.
[[nodiscard]] Result<std::unique_ptr<ClientTransport>> MakeNativeTransport(
    const Runtime& runtime, const Settings& settings, const Origin& origin,
    std::shared_ptr<EventLoop> loop, ConnectionPool** pool);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_POOL_H_
