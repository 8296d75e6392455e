// SPDX-License-Identifier: Apache-2.0
// RuntimeFile::TargetOf: what RuntimeFile controls of a client, written
// once for the HTTP client (runtime_file.cc) and the gRPC one
// (runtime_file_rpc.cc, built into outbound::rpc), which offer the same
// switches.
#ifndef OUTBOUND_SRC_CONFIG_RUNTIME_TARGET_H_
#define OUTBOUND_SRC_CONFIG_RUNTIME_TARGET_H_

#include "outbound/config/runtime_file.h"

namespace outbound::config {

template <class ClientT>
RuntimeFile::Target RuntimeFile::TargetOf(ClientT& client) {
  return Target{.override_breaker = [&client](circuit::Override o) { client.OverrideBreaker(o); },
                .set_faults = [&client](FaultSettings f) { client.SetFaults(f); },
                .set_rate_limit =
                    [&client](std::optional<http::RateLimit> r) { return client.SetRateLimit(r); },
                .own_faults = client.faults(),
                .own_rate_limit = client.rate_limit()};
}

}  // namespace outbound::config

#endif  // OUTBOUND_SRC_CONFIG_RUNTIME_TARGET_H_
