// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/network_map.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "outbound/internal/ascii.h"

namespace outbound::testing {
namespace {

// Host names compare without regard to case (RFC 3986 §3.2.2).
std::string Lower(std::string_view host) {
  return outbound::internal::AsciiLowered(std::string(host));
}

}  // namespace

void NetworkMap::Add(const std::string& host, std::uint16_t port, const std::string& address,
                     std::uint16_t to_port) {
  std::lock_guard lock(mu_);
  routes_[{Lower(host), port}] = {Endpoint{address, to_port}};
}

void NetworkMap::Set(const std::string& host, std::uint16_t port, std::vector<Endpoint> endpoints) {
  std::lock_guard lock(mu_);
  routes_[{Lower(host), port}] = std::move(endpoints);
}

void NetworkMap::Remove(const std::string& host, std::uint16_t port) {
  std::lock_guard lock(mu_);
  routes_.erase({Lower(host), port});
}

Route NetworkMap::Resolve(std::string_view host, std::uint16_t port) const {
  std::lock_guard lock(mu_);
  ++resolves_;
  auto it = routes_.find({Lower(host), port});
  if (it == routes_.end() || it->second.empty()) return Route{Route::Kind::kUnreachable, {}};
  return Route{Route::Kind::kEndpoint, it->second};
}

std::uint16_t PortNothingListensOn() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  bool bound = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), length) == 0 &&
               getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  int error = errno;
  if (fd >= 0) close(fd);
  // Port 0 would be no port at all: a test given it would show nothing.
  if (!bound) {
    throw std::runtime_error("PortNothingListensOn: no port to bind on 127.0.0.1: " +
                             std::system_category().message(error));
  }
  return ntohs(address.sin_port);
}

}  // namespace outbound::testing
