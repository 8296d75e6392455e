// SPDX-License-Identifier: Apache-2.0
// Where a connection dials: an IP literal as it is, a name through the OS
// resolver on a thread of its own. Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_RESOLVER_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_RESOLVER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "connection.h"

namespace outbound::http::internal::transport {

// `text` as an IP literal's socket address, if it is one.
std::optional<SocketAddress> Literal(const std::string& text, std::uint16_t port);

// "10.0.0.7:8443", "[::1]:8443".
std::string Text(const SocketAddress& address);

// `addresses` with their families taking turns, the first's family first,
// each family's addresses in their order (RFC 8305 §4): a family whose
// path is broken delays the other by one attempt delay, not by all of its
// addresses.
std::vector<SocketAddress> InterleaveFamilies(std::vector<SocketAddress> addresses);

// Resolves names with the OS resolver on a thread of its own, so a slow
// DNS answer never holds the loop. Its destructor waits for the name being
// resolved, if any.
class Resolver {
 public:
  // Called on the resolver's thread: the addresses in the resolver's
  // order, or an error.
  using Done = std::function<void(std::vector<SocketAddress>, std::string error)>;

  Resolver();
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  void Resolve(std::string host, std::uint16_t port, Done done);

 private:
  struct Job {
    std::string host;
    std::uint16_t port;
    Done done;
  };

  void Run();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_RESOLVER_H_
