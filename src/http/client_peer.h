// SPDX-License-Identifier: Apache-2.0
// The library's own tests' view of a client's insides: what its call path
// is made of, so a test can hold the docs to the order the code builds.
// Internal.
#ifndef OUTBOUND_SRC_HTTP_CLIENT_PEER_H_
#define OUTBOUND_SRC_HTTP_CLIENT_PEER_H_

#include <string>

#include "outbound/http/client.h"

namespace outbound::http::internal {

struct ClientPeer {
  // "call middleware → bulkhead → rate limit → redirects → retry loop": the client's
  // call layers, top to bottom, as its settings made them.
  static std::string CallLayers(const Client& client);
  // "attempt span → breaker → … → transport".
  static std::string AttemptLayers(const Client& client);
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_CLIENT_PEER_H_
