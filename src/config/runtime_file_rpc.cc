// SPDX-License-Identifier: Apache-2.0
// RuntimeFile::Control for a gRPC client, built into outbound::rpc (as
// config::ReadRpcSettings is), so that outbound::config needs no gRPC
// client.
#include "outbound/config/runtime_file.h"
#include "outbound/rpc/client.h"

namespace outbound::config {

Subscription RuntimeFile::Control(std::string dependency, rpc::Client& client) {
  return Control(
      std::move(dependency),
      Target{.override_breaker = [&client](circuit::Override o) { client.OverrideBreaker(o); },
             .set_faults = [&client](FaultSettings f) { client.SetFaults(f); },
             .set_rate_limit =
                 [&client](std::optional<http::RateLimit> r) { return client.SetRateLimit(r); },
             .own_faults = client.faults(),
             .own_rate_limit = client.rate_limit()});
}

}  // namespace outbound::config
