// SPDX-License-Identifier: Apache-2.0
// The bottom layer: attempts as libcurl transfers on a multi handle of the
// client's own (its connection pool), driven by the client's event loop.
// HTTP/2 with multiplexing over TLS (ALPN h2, then http/1.1); HTTP/1.1 for
// plain http. No proxy is ever read from the environment. Internal.
#ifndef OUTBOUND_SRC_HTTP_CURL_TRANSPORT_H_
#define OUTBOUND_SRC_HTTP_CURL_TRANSPORT_H_

#include <memory>

#include "event_loop.h"
#include "layers.h"
#include "origin.h"
#include "outbound/runtime.h"

namespace outbound::http::internal {

// Builds the transport. kInvalidSettings if the TLS material is unreadable.
// `pool` is set to the transport's connection pool, which lives as long as
// the transport.
[[nodiscard]] Result<std::unique_ptr<AttemptLayer>> MakeCurlTransport(
    const Runtime& runtime, const Settings& settings, const Origin& origin,
    std::shared_ptr<EventLoop> loop, ConnectionPool** pool);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_CURL_TRANSPORT_H_
