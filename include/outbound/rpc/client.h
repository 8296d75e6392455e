// SPDX-License-Identifier: Apache-2.0
// The gRPC client of one dependency (seed 001 revision 1), on grpc++:
//
//   auto settings = rpc::DefaultSettings();
//   settings.addr = "carts:9090";
//   auto carts = rpc::Client::Create(Runtime{}, settings);  // names every bad field
//   rpc::Reply reply = (*carts)->Call("/cart.v1.Carts/Get", request_bytes);
//
// One Client is one dependency: one channel, one circuit breaker, one retry
// budget. Every unary call is retried by the library's own loop (gRPC's own
// retries are off), each attempt through the breaker, classified by
// Settings::classify, with grpc-retry-pushback-ms as the least wait. Every
// wait runs on the Runtime's clock. Create opens no connection.
#ifndef OUTBOUND_RPC_CLIENT_H_
#define OUTBOUND_RPC_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "outbound/circuit/breaker.h"
#include "outbound/context.h"
#include "outbound/error.h"
#include "outbound/rpc/settings.h"
#include "outbound/runtime.h"

namespace outbound::rpc {

// What a unary call ended with.
struct Reply {
  Status status;      // the last attempt's, or the client's own (rejection, deadline, cancel)
  std::string body;   // the serialised response message when status is OK
  Trailers trailers;  // the last attempt's trailing metadata
  int attempts = 0;   // attempts sent to the channel
};

class Client {
 public:
  // Checks every field (naming every bad one) and builds the channel; opens
  // no connection. The Runtime's Network decides where addr's host is
  // dialled; TLS verifies the certificate for addr's host.
  [[nodiscard]] static Result<std::unique_ptr<Client>> Create(const Runtime& runtime,
                                                              Settings settings);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A unary call by full method name ("/pkg.Service/Method") with a
  // serialised request. Blocks the calling thread until the call ends; safe
  // to call from many threads. context's deadline (if earlier than
  // Settings::timeout) bounds the call, its cancel ends it.
  Reply Call(std::string_view method, std::string_view request, const Context& context = {});

  // The typed form for protobuf messages: serialises request, makes the
  // call, and parses the response into *response when the status is OK.
  template <typename Request, typename Response>
  Status Call(std::string_view method, const Request& request, Response* response,
              const Context& context = {}) {
    std::string bytes;
    if (!request.SerializeToString(&bytes)) {
      return Status{Code::kInternal, "the request message did not serialise"};
    }
    Reply reply = Call(method, bytes, context);
    if (reply.status.ok() && !response->ParseFromString(reply.body)) {
      return Status{Code::kInternal, "the response message did not parse"};
    }
    return reply.status;
  }

  // A server-streaming call by full method name: on_message gets each
  // serialised message, on the calling thread, as it arrives. Opening is
  // retried as a unary attempt is (until a first message arrives, nothing
  // is retried once one has); the stream's end settles the breaker's ticket.
  // Only the caller's deadline bounds the stream (Timeout bounds the retries
  // of its opening). The Reply has no body; its attempts count the openings.
  Reply ServerStream(std::string_view method, std::string_view request,
                     const std::function<void(std::string_view message)>& on_message,
                     const Context& context = {});

  // Readiness, latched: false until the channel is first READY, true from
  // then on (an outage of the dependency is the breaker's business, not
  // readiness'). A check before that starts connecting and waits up to
  // `wait` (gRPC's own clock: it waits on the network) for READY. Makes no
  // RPC.
  bool Connected(Duration wait = Duration::zero());

  // The client's breaker, to read its state.
  circuit::Breaker& breaker();

  struct Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_RPC_CLIENT_H_
