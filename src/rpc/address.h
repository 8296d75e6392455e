// SPDX-License-Identifier: Apache-2.0
// host:port, parsed: a name, an IPv4 literal or a bracketed IPv6 literal.
#ifndef OUTBOUND_SRC_RPC_ADDRESS_H_
#define OUTBOUND_SRC_RPC_ADDRESS_H_

#include <cstdint>
#include <string>

#include "outbound/error.h"

namespace outbound::rpc::internal {

struct Addr {
  std::string host;  // without brackets
  std::uint16_t port = 0;
};

Result<Addr> ParseAddr(const std::string& addr);

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_ADDRESS_H_
