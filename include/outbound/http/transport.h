// SPDX-License-Identifier: Apache-2.0
// outbound/http/transport.h
//
// What carries a client's attempts to its dependency. A Runtime's
// `transport` is null by default: the library's own transport (HTTP/1.1
// and HTTP/2 over TLS on the client's event loop, dialled through the
// Runtime's network). A test can give testing::FakeTransport instead
// (outbound/testing/fake_transport.h): every layer above it runs as it does
// over sockets, in the Runtime's (fake) time, with no socket at all.
//
// Only the library and its test kit implement this interface: its one
// method takes the library's internal types, which may change in any
// release.
#ifndef OUTBOUND_HTTP_TRANSPORT_H_
#define OUTBOUND_HTTP_TRANSPORT_H_

#include <memory>

namespace outbound::http {
namespace internal {
class ClientTransport;
struct TransportSpec;
}  // namespace internal

class Transport {
 public:
  virtual ~Transport() = default;
  // What carries one client's exchanges. Called once per client, as the
  // client is made; the Transport must outlive every client made with it.
  virtual std::unique_ptr<internal::ClientTransport> CarryFor(
      const internal::TransportSpec& spec) = 0;
};

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_TRANSPORT_H_
