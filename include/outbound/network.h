// SPDX-License-Identifier: Apache-2.0
// outbound/network.h
//
// How a client reaches a host. A client never resolves or dials a name on
// its own; it asks the Runtime's Network where `host:port` is. The OS
// network says "resolve it as usual"; the test kit's NetworkMap
// says "payments:8443 is 127.0.0.1:41234", so a test names its dependency as
// production does and TLS still verifies the certificate for `payments`.
#ifndef OUTBOUND_NETWORK_H_
#define OUTBOUND_NETWORK_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace outbound {

// One place a name leads to: an IP literal and a port.
struct Endpoint {
  std::string address;
  std::uint16_t port = 0;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// Where to dial for one host and port.
struct Route {
  enum class Kind {
    kSystem,       // resolve the host with the OS resolver, as usual
    kEndpoint,     // dial one of `endpoints` instead
    kUnreachable,  // the name does not exist on this network: fail the dial
  };
  Kind kind = Kind::kSystem;
  // kEndpoint: one or more, the replicas behind the name. A client that
  // balances (Settings::balancing) calls each; one that does not dials
  // them in this order until one answers, but for the one whose last
  // connection closed while still connecting (its SYN unanswered), which
  // it dials last until it answers.
  std::vector<Endpoint> endpoints;
};

// Thread-safe.
class Network {
 public:
  virtual ~Network() = default;
  virtual Route Resolve(std::string_view host, std::uint16_t port) const = 0;
};

// The process's network: every name resolved by the OS, as usual.
const Network& OsNetwork();

}  // namespace outbound

#endif  // OUTBOUND_NETWORK_H_
