// SPDX-License-Identifier: Apache-2.0
// outbound/testing/scripted_client.h
//
// A stand-in for an http::Client in a unit test of code that takes an
// http::Sender: a function of the test answers each request, and the
// requests are kept for the test to read. No network, no clock, no retries,
// no breaker: for testing what the caller's code does with an answer.
//
// example: examples/headers/testing.cc#scripted-client
//   testing::ScriptedClient payments(
//       [](const http::Request& r) -> outbound::Result<http::Response> {
//         if (r.method == "DELETE") return testing::Respond(404);
//         return testing::Respond(201, R"({"id":"ch_1"})");
//       });
//   Checkout checkout(payments.handle());  // a std::unique_ptr<http::Sender>
//   EXPECT_EQ(checkout.Charge("cus_7", 500, "k1").value(), "ch_1");
//   EXPECT_EQ(payments.requests()[0].url, "/charges");
//
// What the client itself does (retries, Retry-After, the breaker, deadlines,
// TLS, what a misbehaving server does to a call) is tested with a real
// client against a FakeServer on a ManualClock (fake_server.h): that is the
// test to write for those. docs/testing.md shows both.
//
// Like a Client, it answers on a thread of its own, never on the caller's
// stack, one call at a time in the order sent. A request with a BodySink
// gets a 2xx answer's body through its sink in one piece and then its end
// (the body then empty; an empty body is not given to the sink at all); the call ends with
// kCancelled if the sink returns false, and with its error if it returns one. What the handler
// throws reaches the caller as a classify function's throw would. Calls
// still queued when it is destroyed end with kCancelled; it must not be
// destroyed from its own callback or handler. Thread-safe.
#ifndef OUTBOUND_TESTING_SCRIPTED_CLIENT_H_
#define OUTBOUND_TESTING_SCRIPTED_CLIENT_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "outbound/error.h"
#include "outbound/http/message.h"
#include "outbound/http/sender.h"

namespace outbound::testing {

// A response as a handler returns it: `status`, `body`, and header fields
// (`{{"Content-Type", "application/json"}}`).
http::Response Respond(int status, std::string body = "", http::ResponseHeaders headers = {});

class ScriptedClient final : public http::Sender {
 public:
  // Answers one request: a Response, or an Error (Error(ErrorKind::kDeadline,
  // "...")) standing for a call that failed.
  using Handler = std::function<Result<http::Response>(const http::Request& request)>;

  explicit ScriptedClient(Handler handler);
  ~ScriptedClient() override;
  ScriptedClient(const ScriptedClient&) = delete;
  ScriptedClient& operator=(const ScriptedClient&) = delete;

  using Sender::SendAsync;
  void SendAsync(http::Request request, Callback done) override;

  // The requests taken so far (each is recorded before the handler sees
  // it), in order, as the caller built them.
  std::vector<http::Request> requests() const;
  std::size_t request_count() const;

  // A Sender that forwards to this one, for code that takes ownership of
  // its client (std::unique_ptr<http::Sender> or std::shared_ptr): this
  // object must outlive it.
  std::unique_ptr<http::Sender> handle();

 private:
  struct Call {
    http::Request request;
    Callback done;
  };
  void Run();
  void Answer(Call& call);

  Handler handler_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Call> queue_;
  std::vector<http::Request> answered_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_SCRIPTED_CLIENT_H_
