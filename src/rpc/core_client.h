// SPDX-License-Identifier: Apache-2.0
// The gRPC client on the call core, over the library's own HTTP/2 (h2c for
// plain text): unary calls, their asynchronous form and server streams,
// with everything the HTTP client has (one deadline per call, retries
// inside the budget with pushback, the breaker, failure injection at
// "grpc:<host>:<port>", a span and an rpc.client.call.duration point per
// attempt, middleware) from the same layers. rpc::Client moves onto it
// once streams in both directions run on the core. Internal.
#ifndef OUTBOUND_SRC_RPC_CORE_CLIENT_H_
#define OUTBOUND_SRC_RPC_CORE_CLIENT_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "outbound/http/client.h"
#include "outbound/rpc/client.h"
#include "outbound/rpc/settings.h"
#include "outbound/runtime.h"

namespace outbound::rpc::internal {

class CoreClient {
 public:
  [[nodiscard]] static Result<std::unique_ptr<CoreClient>> Create(const Runtime& runtime,
                                                                  Settings settings);

  // A unary call: `request` is the serialised request message; the reply's
  // body the response message when the status is OK. Blocks; must not be
  // called from a callback of this client's.
  Reply Call(std::string_view method, std::string_view request, const Context& context = {});
  // The same, ending with `done` on a thread of the client's, never the
  // caller's stack. `thrown`: what the client's classify or breaker policy
  // threw.
  void CallAsync(std::string_view method, std::string_view request, Client::Done done,
                 const Context& context = {});
  // A server stream: each response message to `on_message` as it arrives,
  // on a thread of the client's. Retried while it opens, never once a
  // message has arrived. Blocks until the stream ends.
  Reply ServerStream(std::string_view method, std::string_view request,
                     const std::function<void(std::string_view message)>& on_message,
                     const Context& context = {});

  circuit::State breaker_state() const { return core_->breaker_state(); }

 private:
  CoreClient(std::unique_ptr<http::Client> core, std::size_t receive_limit)
      : core_(std::move(core)), receive_limit_(receive_limit) {}

  std::unique_ptr<http::Client> core_;
  std::size_t receive_limit_;
};

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_CORE_CLIENT_H_
