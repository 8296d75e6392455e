// SPDX-License-Identifier: Apache-2.0
// Parsers and check adapters both settings readers use
// (http_settings.cc, rpc_settings.cc), so each rule is written once.
#ifndef OUTBOUND_SRC_CONFIG_PARSERS_H_
#define OUTBOUND_SRC_CONFIG_PARSERS_H_

#include <string>

#include "outbound/config/resolver.h"

namespace outbound::config::internal {

// Adapts a check on a plain value to Resolver's Check<T>.
template <typename T>
Check<T> Checking(Result<void> (*check)(T)) {
  return [check](const T& value) { return check(value); };
}

// "on" or "off".
inline Result<bool> ParseOnOff(const std::string& text) {
  if (text == "on") return true;
  if (text == "off") return false;
  return Fail(ErrorKind::kInvalidSettings, "must be on or off");
}

}  // namespace outbound::config::internal

#endif  // OUTBOUND_SRC_CONFIG_PARSERS_H_
