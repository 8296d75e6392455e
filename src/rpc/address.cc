// SPDX-License-Identifier: Apache-2.0
#include "address.h"

#include <charconv>

namespace outbound::rpc::internal {

Result<Addr> ParseAddr(const std::string& addr) {
  if (addr.find("://") != std::string::npos) {
    return Fail(ErrorKind::kInvalidSettings, "must be host:port, without a scheme");
  }
  std::string host;
  std::string port;
  if (!addr.empty() && addr.front() == '[') {
    auto close = addr.find(']');
    if (close == std::string::npos || close + 1 >= addr.size() || addr[close + 1] != ':') {
      return Fail(ErrorKind::kInvalidSettings, "must be [ipv6]:port");
    }
    host = addr.substr(1, close - 1);
    port = addr.substr(close + 2);
  } else {
    auto colon = addr.rfind(':');
    if (colon == std::string::npos) return Fail(ErrorKind::kInvalidSettings, "has no port");
    host = addr.substr(0, colon);
    port = addr.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return Fail(ErrorKind::kInvalidSettings, "an IPv6 host goes in brackets: [::1]:443");
    }
  }
  if (host.empty()) return Fail(ErrorKind::kInvalidSettings, "has no host");
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == ':';
    if (!ok) return Fail(ErrorKind::kInvalidSettings, "has a character a host cannot hold");
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 1 ||
      value > 65535) {
    return Fail(ErrorKind::kInvalidSettings, "needs a port from 1 to 65535");
  }
  return Addr{host, static_cast<std::uint16_t>(value)};
}

}  // namespace outbound::rpc::internal
