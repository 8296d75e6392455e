// SPDX-License-Identifier: Apache-2.0
// RuntimeFile::Control for a gRPC client, built into outbound::rpc (as
// config::ReadRpcSettings is), so that outbound::config needs no gRPC
// client.
#include "outbound/config/runtime_file.h"
#include "outbound/rpc/client.h"
#include "runtime_target.h"

namespace outbound::config {

Subscription RuntimeFile::Control(std::string dependency, rpc::Client& client) {
  return Control(std::move(dependency), TargetOf(client));
}

}  // namespace outbound::config
