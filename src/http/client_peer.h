// SPDX-License-Identifier: Apache-2.0
// What the library's own code sees of a client's insides: its call path,
// so a test can hold the docs to the order the code builds, and what a
// front end on the call core (the gRPC client) needs beyond the public
// API. Internal.
#ifndef OUTBOUND_SRC_HTTP_CLIENT_PEER_H_
#define OUTBOUND_SRC_HTTP_CLIENT_PEER_H_

#include <functional>
#include <memory>
#include <string>

#include "outbound/circuit/breaker.h"
#include "outbound/http/client.h"

namespace outbound::http::internal {

struct ClientPeer {
  // "call middleware → bulkhead → rate limit → redirects → retry loop": the client's
  // call layers, top to bottom, as its settings made them.
  static std::string CallLayers(const Client& client);
  // "attempt span → breaker → … → transport".
  static std::string AttemptLayers(const Client& client);

  // Client::SendAsync, with the front end's word on whether the request may
  // reach the server twice (CallRequest::idempotent).
  static void SendAsync(Client& client, Request request, bool idempotent, Client::Callback done);
  // Runs `fn` on the client's event-loop thread, as the callback of a call
  // that ends inside SendAsync runs: for a front end's call that ends
  // before it reaches the core.
  static void Post(Client& client, std::function<void()> fn);
  // The client's one breaker.
  static circuit::Breaker& breaker(Client& client);

  static std::unique_ptr<Client> Make(std::unique_ptr<Client::Impl> impl);
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_CLIENT_PEER_H_
