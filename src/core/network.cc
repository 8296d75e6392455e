// SPDX-License-Identifier: Apache-2.0
#include "outbound/network.h"

namespace outbound {
namespace {

class OsNetworkImpl final : public Network {
 public:
  Route Resolve(std::string_view, std::uint16_t) const override { return Route{}; }
};

}  // namespace

const Network& OsNetwork() {
  static const OsNetworkImpl network;
  return network;
}

}  // namespace outbound
