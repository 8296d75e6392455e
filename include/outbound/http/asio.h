// SPDX-License-Identifier: Apache-2.0
// outbound/http/asio.h
//
// Any Sender (an http::Client, a testing::ScriptedClient) as a Boost.Asio
// asynchronous operation, so a C++20 coroutine awaits a call:
//
// example: examples/headers/http.cc#asio
//   asio::awaitable<void> Charge(http::Sender& payments) {
//     http::Request request = http::Request::Get("/charges/1");
//     outbound::Result<http::Response> sent =
//         co_await http::AsyncSend(payments, std::move(request), asio::use_awaitable);
//     // ...
//   }
//
// The completion token decides the form: asio::use_awaitable (a
// coroutine), asio::deferred, asio::use_future, or a handler
// `void(std::exception_ptr thrown, Result<Response> result)`. The handler
// runs through its associated executor (a coroutine resumes on the
// executor it runs on, never on the client's event-loop thread), and the
// operation keeps that executor's work alive until it completes, so
// `io_context::run()` does not return while a call is in flight. What the
// user's classify or breaker policy throws is the `thrown` argument: a
// coroutine's co_await rethrows it.
//
// The operation is not cancellable through Asio (a `||` with a timer still
// waits for the call): bound a call with Request::WithTimeout or a Context's
// CancelToken. Destroy the Sender (a Client ends its calls with kCancelled
// and joins its thread) before the execution context its calls complete
// on: the Sender's thread posts each completion to the context, and may
// still be returning from that post when `run()` has already returned.
//
// Optional and header-only: outbound's libraries do not depend on Boost;
// including this header needs Boost.Asio (1.81 or later) on the include
// path.
#ifndef OUTBOUND_HTTP_ASIO_H_
#define OUTBOUND_HTTP_ASIO_H_

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <memory>
#include <utility>

#include "outbound/error.h"
#include "outbound/http/message.h"
#include "outbound/http/sender.h"

namespace outbound::http {

template <typename CompletionToken>
auto AsyncSend(Sender& sender, Request request, CompletionToken&& token) {
  using Signature = void(std::exception_ptr, Result<Response>);
  auto initiate = [&sender](auto handler, Request to_send) {
    using Handler = decltype(handler);
    auto work = boost::asio::make_work_guard(handler);
    // Shared: the Sender's callback is a std::function, which must be
    // copyable, and an Asio handler may only be moved.
    auto state =
        std::make_shared<std::pair<Handler, decltype(work)>>(std::move(handler), std::move(work));
    sender.SendAsync(
        std::move(to_send), [state](Result<Response> result, std::exception_ptr thrown) {
          auto executor = state->second.get_executor();
          boost::asio::post(executor, [state, thrown, result = std::move(result)]() mutable {
            Handler completion = std::move(state->first);
            state->second.reset();
            std::move(completion)(thrown, std::move(result));
          });
        });
  };
  return boost::asio::async_initiate<CompletionToken, Signature>(initiate, token,
                                                                 std::move(request));
}

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_ASIO_H_
