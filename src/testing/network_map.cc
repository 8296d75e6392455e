// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/network_map.h"

#include <algorithm>
#include <cctype>

namespace outbound::testing {
namespace {

// Host names compare without regard to case (RFC 3986 §3.2.2).
std::string Lower(std::string_view host) {
  std::string lower(host);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
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

}  // namespace outbound::testing
