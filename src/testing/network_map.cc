#include "outbound/testing/network_map.h"

namespace outbound::testing {

void NetworkMap::Add(const std::string& host, std::uint16_t port, const std::string& address,
                     std::uint16_t to_port) {
  std::lock_guard lock(mu_);
  routes_[{host, port}] = {address, to_port};
}

void NetworkMap::Remove(const std::string& host, std::uint16_t port) {
  std::lock_guard lock(mu_);
  routes_.erase({host, port});
}

Route NetworkMap::Resolve(std::string_view host, std::uint16_t port) const {
  std::lock_guard lock(mu_);
  auto it = routes_.find({std::string(host), port});
  if (it == routes_.end()) return Route{Route::Kind::kUnreachable, "", 0};
  return Route{Route::Kind::kEndpoint, it->second.first, it->second.second};
}

}  // namespace outbound::testing
