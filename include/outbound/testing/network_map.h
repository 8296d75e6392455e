// SPDX-License-Identifier: Apache-2.0
// outbound/testing/network_map.h
//
// A Network for tests: names map to loopback endpoints, and every other name
// is unreachable, so a test never touches DNS or a real host.
//
// example: examples/headers/testing.cc#network-map
//   testing::NetworkMap network;
//   network.Add("payments", 8443, "127.0.0.1", server->port());
//   runtime.network = &network;  // https://payments:8443 reaches the fake
//
// Thread-safe.
#ifndef OUTBOUND_TESTING_NETWORK_MAP_H_
#define OUTBOUND_TESTING_NETWORK_MAP_H_

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "outbound/network.h"

namespace outbound::testing {

class NetworkMap final : public Network {
 public:
  // Makes `host`:`port` reach `address`:`to_port` (an IP literal).
  void Add(const std::string& host, std::uint16_t port, const std::string& address,
           std::uint16_t to_port);
  // Makes `host`:`port` reach every one of `endpoints` (replicas behind
  // one name), replacing what it reached; a test calls it again to add or
  // remove a replica while clients run.
  void Set(const std::string& host, std::uint16_t port, std::vector<Endpoint> endpoints);
  void Remove(const std::string& host, std::uint16_t port);

  Route Resolve(std::string_view host, std::uint16_t port) const override;

  // How many times a name was resolved. A client resolves its
  // dependency's name to dial it, and also to learn whether it can be
  // reached at all before it hands an attempt over: to know an attempt is
  // on a connection being made, wait for BlackHole::dials() instead.
  int resolves() const {
    std::lock_guard lock(mu_);
    return resolves_;
  }

 private:
  mutable std::mutex mu_;
  mutable int resolves_ = 0;
  std::map<std::pair<std::string, std::uint16_t>, std::vector<Endpoint>> routes_;
};

// A port on 127.0.0.1 that nothing listens on now: a dial there is refused,
// as a dependency that is down refuses it. (The port was bound and let go;
// another process could take it again, which on loopback in a test it does
// not in practice.) Throws std::runtime_error if the system gives no port.
std::uint16_t PortNothingListensOn();

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_NETWORK_MAP_H_
