// SPDX-License-Identifier: Apache-2.0
// The gRPC client of one dependency, on grpc++, with the HTTP client's retry
// model, retry budget and circuit breaker:
//
// example: examples/headers/rpc.cc#rpc-client
//   auto settings = rpc::DefaultSettings();
//   settings.addr = "carts:9090";
//   auto carts = rpc::Client::Create(Runtime{}, settings);  // names every bad field
//   rpc::Reply reply = (*carts)->Call("/cart.v1.Carts/Get", request_bytes);
//
// or through a generated stub on the client's channel, with the same loop
// (its callback method, or its blocking one):
//
// example: examples/headers/rpc.cc#rpc-stub
//   auto stub = cart::v1::Carts::NewStub((*carts)->channel());
//   rpc::Status status = (*carts)->Call("/cart.v1.Carts/Get", &cart::v1::Carts::Stub::async::Get,
//                                       stub->async(), request, &cart, context);
//
// or without a thread waiting for it, `done` told on one of gRPC's threads:
//
// example: examples/headers/rpc.cc#rpc-stub-async
//   (*carts)->CallAsync("/cart.v1.Carts/Get", &cart::v1::Carts::Stub::async::Get, stub->async(),
//                       &request, &cart, [](rpc::Status status, std::exception_ptr thrown) {
//                         if (thrown || !status.ok()) std::cerr << "no cart\n";
//                       });
//
// One Client is one dependency: one channel, one circuit breaker, one retry
// budget. Every unary call is retried by the library's own loop (gRPC's own
// retries are off), each attempt through the breaker, classified by
// Settings::classify, with grpc-retry-pushback-ms as the least wait. Every
// wait runs on the Runtime's clock. Create opens no connection. Streams
// (ServerStream, OpenStream) are retried only while they open.
#ifndef OUTBOUND_RPC_CLIENT_H_
#define OUTBOUND_RPC_CLIENT_H_

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>

#include "outbound/circuit/breaker.h"
#include "outbound/context.h"
#include "outbound/error.h"
#include "outbound/rpc/settings.h"
#include "outbound/rpc/stream.h"
#include "outbound/runtime.h"

// Declared only: this header compiles without grpc++'s. A caller of the stub
// helpers has them from its generated code.
namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace outbound::rpc {

// What a unary call ended with.
struct Reply {
  Status status;      // the last attempt's, or the client's own (rejection, deadline, cancel)
  std::string body;   // the serialised response message when status is OK
  Trailers trailers;  // the last attempt's trailing metadata
  int attempts = 0;   // attempts sent to the channel
};

// An attempt's status handed over from the thread that completes it (one of
// gRPC's) to the caller's thread blocked in Wait. Done notifies while it
// holds the lock, so once Wait returns nothing touches the AttemptWait: it
// may live on the waiting thread's stack.
class AttemptWait {
 public:
  void Done(Status status) {
    std::lock_guard lock(mu_);
    status_ = std::move(status);
    done_ = true;
    cv_.notify_one();
  }
  Status Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return std::move(status_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Status status_;
};

namespace internal {
class AsyncCall;
}  // namespace internal

// How an asynchronous attempt (Client::AsyncAttempt) reports its end: call
// it once, with the RPC's status. A pointer's size: a callback that
// captures it fits in std::function's own storage.
class AttemptFinished {
 public:
  void operator()(Status status) const;

 private:
  friend class internal::AsyncCall;
  explicit AttemptFinished(internal::AsyncCall* call) : call_(call) {}
  internal::AsyncCall* call_;
};

namespace internal {
// What the caller of an asynchronous call supplies: how each attempt is
// made, and what is told of the end. One object per call, allocated once:
// a stub helper's captures and the caller's callback live in it together.
class AsyncHooks {
 public:
  virtual ~AsyncHooks() = default;
  // Starts one RPC on `attempt`, reporting its end through `finished`.
  virtual void Send(grpc::ClientContext* attempt, AttemptFinished finished) = 0;
  // The call has ended (Client::Done's contract).
  virtual void Done(Reply reply, std::exception_ptr thrown) = 0;
};
}  // namespace internal

class Client {
 public:
  // Checks every field (naming every bad one) and builds the channel; opens
  // no connection. The Runtime's Network decides where addr's host is
  // dialled; TLS verifies the certificate for addr's host.
  [[nodiscard]] static Result<std::unique_ptr<Client>> Create(const Runtime& runtime,
                                                              Settings settings);

  // Ends every call still going, and waits until each has left the client
  // before freeing anything. A blocking call (Call, Invoke, the stub
  // helpers, ServerStream, OpenStream while it opens) has its attempt in
  // flight cancelled, or its wait before the next attempt cut short, and
  // sends nothing more; it returns CANCELLED ("the client was destroyed
  // before the call ended"), or the last attempt's status when it was
  // between attempts, as when its caller cancels. An asynchronous call ends
  // the same way and its `done` runs (CallAsync). A Stream that opened must
  // end first (outbound/rpc/stream.h). Must not run on a callback of this
  // client (classify, the breaker's policy, an attempt, on_message, `done`):
  // it would wait for itself.
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
  // Timeout bounds its opening (each attempt until its request is sent, and
  // the retries); only the caller's deadline bounds the stream once open.
  // The Reply has no body; its attempts count the openings.
  Reply ServerStream(std::string_view method, std::string_view request,
                     const std::function<void(std::string_view message)>& on_message,
                     const Context& context = {});

  // Opens a client-streaming or bidirectional stream by full method name
  // (see outbound/rpc/stream.h). Opening runs the unary call's loop: each
  // attempt admitted by the breaker, and a failed one (nothing listening,
  // the channel failing, no route to the name) classified with no trailers
  // and retried as a unary attempt is; Timeout bounds those retries. An
  // attempt has opened once gRPC has sent the call's headers on a
  // connection; the stream is then a Success for the retry budget (classify
  // is not asked) and holds the breaker's ticket until it ends. An attempt
  // still not open at Timeout (a connection that hangs while it is made)
  // ends DEADLINE_EXCEEDED. Only the Context's deadline bounds an open
  // stream, and its cancel ends it.
  // Returns a stream that did not open (opened() false, Finish saying why)
  // rather than an error, so a caller has one path to its status. Blocks
  // while it opens; safe to call from many threads.
  Stream OpenStream(std::string_view method, const Context& context = {});

  // One attempt of a unary call that the caller makes itself, on the fresh
  // grpc::ClientContext the client hands it: its deadline (what is left of
  // the call's), trace context and baggage set, the caller's cancel wired
  // to TryCancel. It must make one RPC on the client's channel with that
  // context and return its status; its trailers are read from the context.
  using Attempt = std::function<Status(grpc::ClientContext* attempt)>;

  // Runs `attempt` through the unary call's loop (breaker, classify under
  // `method`, retries, telemetry), as Call does. The Reply has no body: the
  // attempt keeps its response. method is the full name the attempt calls,
  // "/pkg.Service/Method"; classify, spans and metrics go by it. An attempt
  // is not run when the client has no channel (the Runtime's network has no
  // route for the name): it fails UNAVAILABLE as Call's do.
  Reply Invoke(std::string_view method, const Attempt& attempt, const Context& context = {});

  // A generated stub's unary method through the library's loop:
  //
  // example: examples/headers/rpc.cc#rpc-blocking-stub
  //   auto stub = Carts::NewStub(client->channel());
  //   rpc::Status status =
  //       client->Call("/cart.v1.Carts/Get", &Carts::Stub::Get, *stub, request, &reply, context);
  //
  // Each attempt calls (stub.*stub_method)(fresh context, request, response).
  // method must name the RPC that stub_method makes (the stub cannot tell
  // it). The stub should be on channel(); on another channel its calls are
  // still counted by this client's breaker.
  template <typename Stub, typename Request, typename Response, typename GrpcStatus,
            typename GrpcContext>
  Status Call(std::string_view method,
              GrpcStatus (Stub::*stub_method)(GrpcContext*, const Request&, Response*),
              std::type_identity_t<Stub>& stub, const Request& request, Response* response,
              const Context& context = {}) {
    static_assert(std::is_same_v<GrpcContext, grpc::ClientContext>,
                  "a generated stub's blocking unary method");
    // The attempt captures one reference, so its std::function holds it in
    // place instead of allocating.
    struct Args {
      Stub& stub;
      GrpcStatus (Stub::*fn)(GrpcContext*, const Request&, Response*);
      const Request& request;
      Response* response;
    } args{stub, stub_method, request, response};
    return Invoke(
               method,
               [&args](grpc::ClientContext* attempt) {
                 GrpcStatus status = (args.stub.*args.fn)(attempt, args.request, args.response);
                 return Status{static_cast<Code>(status.error_code()), status.error_message()};
               },
               context)
        .status;
  }

  // The same on the stub's callback API: the attempt is made with the
  // callback overload of the stub's async() method and the calling thread
  // sleeps until gRPC's own threads complete it, rather than polling gRPC's
  // completion queue itself as a blocking call does. Fewer instructions
  // than the blocking form (no deadline timer for the poller), more CPU
  // time (a thread hand-over per attempt): docs/performance.md, "gRPC".
  //
  // example: examples/headers/rpc.cc#rpc-callback-stub
  //   auto stub = Carts::NewStub(client->channel());
  //   rpc::Status status = client->Call("/cart.v1.Carts/Get", &Carts::Stub::async::Get,
  //                                     stub->async(), request, &reply, context);
  //
  // `&Echo::StubInterface::async_interface::Say` with a StubInterface's
  // async() works too (a mock stub). Blocks until the call ends; the
  // callback runs on gRPC's thread and only wakes the caller.
  template <typename AsyncStub, typename Request, typename Response, typename GrpcStatus,
            typename GrpcContext>
  Status Call(std::string_view method,
              void (AsyncStub::*stub_method)(GrpcContext*, const Request*, Response*,
                                             std::function<void(GrpcStatus)>),
              std::type_identity_t<AsyncStub>* stub, const Request& request, Response* response,
              const Context& context = {}) {
    static_assert(std::is_same_v<GrpcContext, grpc::ClientContext>,
                  "a generated stub's callback unary method (stub->async())");
    struct Args {
      AsyncStub* stub;
      void (AsyncStub::*fn)(GrpcContext*, const Request*, Response*,
                            std::function<void(GrpcStatus)>);
      const Request* request;
      Response* response;
    } args{stub, stub_method, &request, response};
    return Invoke(
               method,
               [&args](grpc::ClientContext* attempt) {
                 AttemptWait wait;
                 // One reference captured: the callback fits in
                 // std::function's own storage.
                 (args.stub->*args.fn)(
                     attempt, args.request, args.response, [&wait](GrpcStatus status) {
                       wait.Done(
                           Status{static_cast<Code>(status.error_code()), status.error_message()});
                     });
                 return wait.Wait();
               },
               context)
        .status;
  }

  // What an asynchronous call ends with: its Reply, and what the user's own
  // code (classify, the breaker's policy) threw, if anything; the Reply is
  // then the last attempt's, unclassified.
  using Done = std::function<void(Reply reply, std::exception_ptr thrown)>;

  // Call, without blocking: returns once the first attempt is sent (or the
  // call has ended), and `done` gets the Reply when the call ends. The same
  // loop as Call's, the waits between attempts armed on the Runtime's clock
  // instead of slept through, so no thread waits for the call. `done` runs
  // once, on one of gRPC's threads, never on the stack of the thread that
  // started the call, cancelled it or advanced a ManualClock (even for a
  // call that ends at once: rejected by the breaker, already cancelled);
  // it must not block or throw. Each call's `done` is destroyed once it has
  // run, before the call lets the Client go. Destroying the Client ends the
  // calls still going (CANCELLED unless an attempt had a status) and waits
  // for their `done`: do not destroy it from one.
  void CallAsync(std::string_view method, std::string_view request, Done done,
                 const Context& context = {});

  // One attempt of an asynchronous call that the caller makes itself, on
  // the fresh grpc::ClientContext the client hands it (as Attempt's): it
  // must start one RPC on the client's channel with that context and call
  // `finished` once with its status, from the RPC's completion. It may
  // throw instead of starting the RPC (and then never call `finished`):
  // the call ends, and `done` gets what it threw.
  using AsyncAttempt = std::function<void(grpc::ClientContext* attempt, AttemptFinished finished)>;

  // Runs `attempt` through the asynchronous loop (CallAsync's). The Reply
  // has no body: the attempt keeps its response.
  void InvokeAsync(std::string_view method, AsyncAttempt attempt, Done done,
                   const Context& context = {});

  // A generated stub's callback method through the asynchronous loop: no
  // thread waits for the call, the least CPU a call of all the forms.
  //
  // example: examples/headers/rpc.cc#rpc-async-stub
  //   auto stub = Carts::NewStub(client->channel());
  //   client->CallAsync("/cart.v1.Carts/Get", &Carts::Stub::async::Get, stub->async(), &request,
  //                     &reply, [](rpc::Status status, std::exception_ptr thrown) {
  //                       if (thrown || !status.ok()) std::cerr << "no cart\n";
  //                     });
  //
  // `done` is any callable taking (rpc::Status, std::exception_ptr), kept
  // with the call in one allocation. request and response must stay valid
  // until it runs, as for the stub's own callback methods. A retried
  // attempt parses its response into *response afresh.
  template <typename AsyncStub, typename Request, typename Response, typename GrpcStatus,
            typename GrpcContext, typename OnDone>
  void CallAsync(std::string_view method,
                 void (AsyncStub::*stub_method)(GrpcContext*, const Request*, Response*,
                                                std::function<void(GrpcStatus)>),
                 std::type_identity_t<AsyncStub>* stub, const Request* request, Response* response,
                 OnDone&& done, const Context& context = {}) {
    static_assert(std::is_same_v<GrpcContext, grpc::ClientContext>,
                  "a generated stub's callback unary method (stub->async())");
    static_assert(std::is_invocable_v<std::decay_t<OnDone>&, Status, std::exception_ptr>,
                  "done takes (rpc::Status, std::exception_ptr)");
    using Method = void (AsyncStub::*)(GrpcContext*, const Request*, Response*,
                                       std::function<void(GrpcStatus)>);
    struct StubHooks final : internal::AsyncHooks {
      StubHooks(AsyncStub* s, Method m, const Request* q, Response* r, OnDone&& d)
          : stub(s), method(m), request(q), response(r), done(std::forward<OnDone>(d)) {}
      void Send(grpc::ClientContext* attempt, AttemptFinished finished) override {
        (stub->*method)(attempt, request, response, [finished](GrpcStatus status) {
          finished(Status{static_cast<Code>(status.error_code()), status.error_message()});
        });
      }
      void Done(Reply reply, std::exception_ptr thrown) override {
        done(std::move(reply.status), std::move(thrown));
      }
      AsyncStub* stub;
      Method method;
      const Request* request;
      Response* response;
      std::decay_t<OnDone> done;
    };
    StartAsync(method,
               std::make_unique<StubHooks>(stub, stub_method, request, response,
                                           std::forward<OnDone>(done)),
               context);
  }

  // The client's channel, for a generated stub (Service::NewStub(channel())).
  // Null when the Runtime's network has no route for addr's host; every
  // call of the client then fails UNAVAILABLE without one. Calls made on it
  // directly bypass the client's retries and breaker, and its deadline: the
  // client keeps each attempt's deadline itself, so gRPC's own deadline
  // checks are off on this channel. A direct call's deadline is still sent
  // (grpc-timeout) and a gRPC server ends the call at it, but nothing on
  // this side does if the server never answers: make calls through the
  // client, or on a channel of your own.
  std::shared_ptr<grpc::Channel> channel() const;

  // Readiness, latched: false until the channel is first READY (seen here,
  // or proven by a call answered OK), true from then on (an outage of the
  // dependency is the breaker's business, not readiness'). A check before
  // that starts connecting and waits up to `wait` (gRPC's own clock: it
  // waits on the network) for READY. Makes no RPC.
  bool Connected(Duration wait = Duration::zero());

  // The client's breaker, to read its state.
  circuit::Breaker& breaker();

  struct Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  // Every asynchronous form comes here (async_call.cc).
  void StartAsync(std::string_view method, std::unique_ptr<internal::AsyncHooks> hooks,
                  const Context& context);
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_RPC_CLIENT_H_
