// SPDX-License-Identifier: Apache-2.0
// outbound/http/sender.h
//
// What service code needs of an HTTP client: send a request, get its
// outcome. http::Client is the real one; testing::ScriptedClient
// (outbound/testing/scripted_client.h) answers from a function of the test,
// for unit tests of code that should not care about the network. Code that
// takes a Sender takes either:
//
// example: examples/headers/http.cc#sender
//   class Checkout {
//    public:
//     explicit Checkout(std::unique_ptr<http::Sender> payments);  // a Client in main
//   };
//
// A Sender's one virtual function is the callback form; the blocking and
// future forms are built on it here, the same for every Sender. For a
// coroutine, outbound/http/asio.h awaits any Sender.
#ifndef OUTBOUND_HTTP_SENDER_H_
#define OUTBOUND_HTTP_SENDER_H_

#include <exception>
#include <functional>
#include <future>

#include "outbound/error.h"
#include "outbound/http/message.h"

namespace outbound::http {

class Sender {
 public:
  virtual ~Sender() = default;

  // `done` gets the call's outcome, and `thrown` what the user's own code
  // (a classify function, a breaker policy, a body sink) threw, the result
  // then an error.
  using Callback = std::function<void(Result<Response> result, std::exception_ptr thrown)>;

  // Sends `request` without waiting. `done` runs exactly once, never on the
  // caller's stack (the Sender's own thread runs it, even for a call that
  // fails at once), and must not block or throw.
  virtual void SendAsync(Request request, Callback done) = 0;

  // The same, with the outcome in a future, which rethrows what the user's
  // code threw.
  [[nodiscard]] std::future<Result<Response>> SendAsync(Request request);

  // Sends `request` and waits for the outcome; rethrows what the user's
  // code threw. Must not be called from a Sender's callback.
  [[nodiscard]] Result<Response> Send(Request request) {
    return SendAsync(std::move(request)).get();
  }

 protected:
  Sender() = default;
  Sender(const Sender&) = default;
  Sender& operator=(const Sender&) = default;
};

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_SENDER_H_
