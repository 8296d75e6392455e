// SPDX-License-Identifier: Apache-2.0
// outbound/rpc/asio.h
//
// A unary gRPC call (Client::CallAsync), and a stream's next message
// (Stream::ReadAsync), as Boost.Asio asynchronous operations, so a C++20
// coroutine awaits them:
//
// example: examples/headers/rpc.cc#asio
//   asio::awaitable<void> Fetch(rpc::Client& carts, std::string request) {
//     constexpr char kGet[] = "/cart.v1.Carts/Get";
//     rpc::Reply reply =
//         co_await rpc::AsyncCall(carts, kGet, std::move(request), asio::use_awaitable);
//     // ...
//   }
//
// The completion token decides the form: asio::use_awaitable (a coroutine,
// which rethrows `thrown` at the co_await), asio::deferred,
// asio::use_future, or a handler `void(std::exception_ptr thrown, Reply
// reply)`; `thrown` is what the user's own classify or breaker policy
// threw. As http::AsyncSend (outbound/http/asio.h): the handler runs
// through its associated executor, never on the client's event-loop
// thread; the operation keeps that executor's work alive until it
// completes; it is not cancellable through Asio (the Context's deadline and
// CancelToken bound it); and the Client must be destroyed before the
// execution context its calls complete on.
//
// Optional and header-only: outbound's libraries do not depend on Boost;
// including this header needs Boost.Asio (1.81 or later) on the include
// path.
#ifndef OUTBOUND_RPC_ASIO_H_
#define OUTBOUND_RPC_ASIO_H_

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "outbound/rpc/client.h"
#include "outbound/rpc/stream.h"

namespace outbound::rpc {

// `method`, `request` and `context` are kept by the operation: one on a
// deferred token may start after the caller's are gone.
template <typename CompletionToken>
auto AsyncCall(Client& client, std::string method, std::string request, Context context,
               CompletionToken&& token) {
  using Signature = void(std::exception_ptr, Reply);
  auto initiate = [&client](auto handler, const std::string& to_call, const std::string& bytes,
                            const Context& in) {
    using Handler = decltype(handler);
    auto work = boost::asio::make_work_guard(handler);
    // Shared: Client::Done is a std::function, which must be copyable, and
    // an Asio handler may only be moved.
    auto state =
        std::make_shared<std::pair<Handler, decltype(work)>>(std::move(handler), std::move(work));
    client.CallAsync(
        to_call, bytes,
        [state](Reply reply, std::exception_ptr thrown) {
          auto executor = state->second.get_executor();
          boost::asio::post(executor, [state, thrown, reply = std::move(reply)]() mutable {
            Handler completion = std::move(state->first);
            state->second.reset();
            std::move(completion)(thrown, std::move(reply));
          });
        },
        in);
  };
  return boost::asio::async_initiate<CompletionToken, Signature>(
      initiate, token, std::move(method), std::move(request), std::move(context));
}

// The same with no Context of the caller's. An overload, not a default
// argument: GCC 12 builds a defaulted Context wrongly in a call made
// inside a coroutine.
template <typename CompletionToken>
auto AsyncCall(Client& client, std::string method, std::string request, CompletionToken&& token) {
  return AsyncCall(client, std::move(method), std::move(request), Context{},
                   std::forward<CompletionToken>(token));
}

// The stream's next message (Stream::ReadAsync) as an operation whose
// completion is `void(std::optional<std::string> message)`: nullopt once
// the server has sent its last one or the stream ended. The same rules as
// AsyncCall's; the stream must outlive the operation.
template <typename CompletionToken>
auto AsyncRead(Stream& stream, CompletionToken&& token) {
  using Signature = void(std::optional<std::string>);
  auto initiate = [&stream](auto handler) {
    using Handler = decltype(handler);
    auto work = boost::asio::make_work_guard(handler);
    auto state =
        std::make_shared<std::pair<Handler, decltype(work)>>(std::move(handler), std::move(work));
    stream.ReadAsync([state](std::optional<std::string> message) {
      auto executor = state->second.get_executor();
      boost::asio::post(executor, [state, message = std::move(message)]() mutable {
        Handler completion = std::move(state->first);
        state->second.reset();
        std::move(completion)(std::move(message));
      });
    });
  };
  return boost::asio::async_initiate<CompletionToken, Signature>(initiate, token);
}

}  // namespace outbound::rpc

#endif  // OUTBOUND_RPC_ASIO_H_
