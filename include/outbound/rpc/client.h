// SPDX-License-Identifier: Apache-2.0
// The gRPC client of one dependency, on the library's own HTTP/2 (h2c for
// plain text, h2 over TLS), with every rule the HTTP client has from the
// same call core: one deadline per call, retries inside the retry budget
// with grpc-retry-pushback-ms as the least wait, the circuit breaker,
// failure injection, a span and an rpc.client.call.duration point per
// attempt, middleware.
//
// example: examples/headers/rpc.cc#rpc-client
//   auto settings = rpc::DefaultSettings();
//   settings.addr = "carts:9090";
//   auto carts = rpc::Client::Create(Runtime{}, settings);  // names every bad field
//   rpc::Reply reply = (*carts)->Call("/cart.v1.Carts/Get", request_bytes);
//
// or with protobuf messages (protoc's C++ output; no gRPC plugin needed):
//
// example: examples/headers/rpc.cc#rpc-typed
//   cart::v1::Cart cart;
//   rpc::Status status = (*carts)->Call("/cart.v1.Carts/Get", request, &cart, context);
//
// or without a thread waiting for it:
//
// example: examples/headers/rpc.cc#rpc-async
//   (*carts)->CallAsync("/cart.v1.Carts/Get", request_bytes,
//                       [](rpc::Reply reply, std::exception_ptr thrown) {
//                         if (thrown || !reply.status.ok()) std::cerr << "no cart\n";
//                       });
//
// One Client is one dependency: one HTTP/2 connection, one circuit breaker,
// one retry budget. A unary call is retried by the core's loop unless its
// method is in Settings::non_idempotent_methods and it may have reached the
// server; a stream only while it opens, before the answer's first message
// (outbound/rpc/stream.h). Every wait runs on the Runtime's clock. Create opens no connection.
#ifndef OUTBOUND_RPC_CLIENT_H_
#define OUTBOUND_RPC_CLIENT_H_

#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "outbound/circuit/breaker.h"
#include "outbound/context.h"
#include "outbound/error.h"
#include "outbound/rpc/settings.h"
#include "outbound/rpc/stream.h"
#include "outbound/runtime.h"

namespace outbound::rpc {

// What a unary call ended with.
struct Reply {
  Status status;      // the last attempt's, or the client's own (rejection, deadline, cancel)
  std::string body;   // the serialised response message when status is OK
  Trailers trailers;  // the last attempt's trailing metadata
  int attempts = 0;   // attempts sent
  // The last attempt's initial metadata, as `trailers` has its trailing:
  // names in lower case, "-bin" values decoded, what gRPC reads itself
  // (content-type, grpc-encoding...) left out. Empty for an answer of
  // trailers alone.
  Metadata headers;
};

class Client {
 public:
  // Checks every field (naming every bad one) and builds the client; opens
  // no connection. The Runtime's Network decides where addr's host is
  // dialled; TLS verifies the certificate for addr's host.
  [[nodiscard]] static Result<std::unique_ptr<Client>> Create(const Runtime& runtime,
                                                              Settings settings);

  // Ends every call still going with CANCELLED (a blocking one returns, an
  // asynchronous one's `done` runs), and waits until each has left the
  // client before freeing anything. A Stream must end first
  // (outbound/rpc/stream.h). Must not run on a callback of this client
  // (classify, the breaker's policy, on_message, `done`): it would wait for
  // itself.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A unary call by full method name ("/pkg.Service/Method") with a
  // serialised request. Blocks the calling thread until the call ends; safe
  // to call from many threads. context's deadline (if earlier than
  // Settings::timeout) bounds the call, its cancel ends it, and each
  // attempt sends its metadata (Context::metadata). What the user's
  // classify or breaker policy throws is rethrown here.
  Reply Call(std::string_view method, std::string_view request, const Context& context = {});

  // The typed form for protobuf messages (anything with SerializeToString
  // and ParseFromString, as protoc's C++ output has): serialises request,
  // makes the call, and parses the response into *response when the status
  // is OK. A response that does not parse is INTERNAL.
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

  // What an asynchronous call ends with: its Reply, and what the user's own
  // code (classify, the breaker's policy) threw, if anything; the Reply is
  // then the last attempt's, unclassified.
  using Done = std::function<void(Reply reply, std::exception_ptr thrown)>;

  // Call, without blocking: returns at once, and `done` gets the Reply when
  // the call ends. The waits between attempts are timers on the Runtime's
  // clock, so no thread waits for the call. `done` runs once, on the
  // client's event-loop thread, never on the stack of a call of yours into
  // the library: not inside CallAsync (even for a call that ends at once:
  // rejected by the breaker, already cancelled), nor inside a
  // CancelSource::Cancel (even one made in another call's `done` or a
  // stream's on_message); it must not block or throw.
  void CallAsync(std::string_view method, std::string_view request, Done done,
                 const Context& context = {});

  // The same, with the Reply in a future, which rethrows what the user's
  // code threw.
  [[nodiscard]] std::future<Reply> CallAsync(std::string_view method, std::string_view request,
                                             const Context& context = {});

  // A server-streaming call by full method name: on_message gets each
  // serialised message as it arrives, on the client's event-loop thread
  // (so it must be quick and must not wait on this client); if it throws,
  // the stream ends (not retried, the breaker counts nothing) and
  // ServerStream rethrows what it threw. Retried as a
  // unary call is until its first message has arrived, never after. The
  // call's deadline (Settings::timeout, or its method's, or the context's) bounds the whole
  // stream. Blocks until the stream ends. The Reply has no body.
  Reply ServerStream(std::string_view method, std::string_view request,
                     const std::function<void(std::string_view message)>& on_message,
                     const Context& context = {});

  // ServerStream, without blocking: returns at once; on_message gets each
  // message as above, and `done` the Reply (no body) once the stream has
  // ended, as CallAsync's does, with what on_message threw, if it did, as
  // `thrown`. on_message is never called after `done`.
  void ServerStreamAsync(std::string_view method, std::string_view request,
                         std::function<void(std::string_view message)> on_message, Done done,
                         const Context& context = {});

  // Opens a client-streaming or bidirectional stream by full method name
  // (see outbound/rpc/stream.h) and returns at once: the stream's request
  // headers go out with its first write or its end, whichever comes first.
  // Only the context's deadline and cancel bound the stream.
  Stream OpenStream(std::string_view method, const Context& context = {});

  // Opens the client's HTTP/2 connection now, so that its first call does
  // not pay for it, and says when it is usable (the TLS handshake done and
  // the server's SETTINGS received) or why it could not be opened: an error
  // naming the dependency (refused, no route, an untrusted certificate, a
  // server that does not speak HTTP/2 or TLS), or kDeadline when none
  // opened within Settings::timeout or by the context's earlier deadline.
  // Ready at once when the connection is usable. Makes no call; the
  // breaker and the retry budget count nothing.
  //
  // example: examples/headers/rpc.cc#rpc-warm
  //   if (auto warmed = (*carts)->Warm().get(); !warmed) std::cerr << warmed.error().message();
  [[nodiscard]] std::future<Result<void>> Warm(const Context& context = {});

  // Readiness, latched: false until the client's connection has been
  // usable (opened by Warm or by a call), true from then on; an outage
  // later is the breaker's business, not readiness'. Opens nothing.
  bool Connected() const;

  // The client's breaker, to read its state.
  circuit::Breaker& breaker();

  // An operator takes over the breaker: http::Client::OverrideBreaker.
  void OverrideBreaker(circuit::Override override);
  // An operator switches failure injection or the rate limit without a
  // restart: http::Client::SetFaults, SetRateLimit.
  void SetFaults(FaultSettings faults);
  [[nodiscard]] Result<void> SetRateLimit(std::optional<http::RateLimit> limit);
  FaultSettings faults() const;
  std::optional<http::RateLimit> rate_limit() const;

  struct Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_RPC_CLIENT_H_
