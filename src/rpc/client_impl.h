// SPDX-License-Identifier: Apache-2.0
// Client::Impl: the call core the gRPC client rides on, and what is the
// front end's own (message limits, which methods are safe to send twice,
// the readiness latch). Shared by client.cc and stream.cc. Internal.
#ifndef OUTBOUND_SRC_RPC_CLIENT_IMPL_H_
#define OUTBOUND_SRC_RPC_CLIENT_IMPL_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/http/client.h"
#include "outbound/rpc/client.h"

namespace outbound::rpc {

struct Client::Impl {
  // Whether an attempt of `method` may reach the server twice.
  bool Idempotent(std::string_view method) const;
  // Sends a call's request through the core.
  void Send(http::Request request, bool idempotent, http::Client::Callback done);

  std::unique_ptr<http::Client> core;
  std::size_t receive_limit = 0;
  std::size_t send_limit = 0;
  bool gzip = false;
  std::vector<std::string> non_idempotent;  // sorted, each without its leading '/'
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_SRC_RPC_CLIENT_IMPL_H_
