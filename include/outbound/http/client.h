// SPDX-License-Identifier: Apache-2.0
// outbound/http/client.h
//
// A client of one HTTP dependency: one origin, one breaker, one retry
// budget, one connection pool. Build it once, at startup, and share it by
// every part of the program that calls the dependency; it is thread-safe.
//
// example: examples/headers/http.cc#client
//   http::Settings settings = http::DefaultSettings();
//   settings.base_url = "https://payments:8443";
//   settings.tls = http::TlsSettings{.root_pem = ca_pem};
//   auto payments = http::Client::CreateOrThrow(Runtime{}, settings);  // names every bad field
//
// example: examples/headers/http.cc#client-send
//   auto resp = payments->Send(http::Request::Get("/charges/1"));
//   if (!resp) return Failed(resp.error().kind());  // switch on it: outbound/error.h
//   if (resp->status == 200) Use(resp->body);
//
// Every call is checked first (another origin fails with kOriginRefused and
// nothing is dialled), then goes down the call layers, and each of its
// attempts down the attempt layers, in this order (the optional ones only
// when their settings, or SetRateLimit and SetFaults since, ask for them):
//
//   call:    call middleware → bulkhead → rate limit → adaptive concurrency
//            → redirects → retry loop
//   attempt: attempt span → breaker → outlier detection → classify
//            → attempt middleware → attempt timeout → fault injection
//            → transport
//
// Every wait runs on the Runtime's clock.
//
// The response's body is read whole before the call returns (up to
// Settings::max_response_bytes), or handed to the request's BodySink as it
// arrives (Request::StreamBodyTo); either way the breaker counts a body
// that fails mid-read as a failure, and Timeout bounds the body too.
#ifndef OUTBOUND_HTTP_CLIENT_H_
#define OUTBOUND_HTTP_CLIENT_H_

#include <chrono>
#include <future>
#include <memory>

#include "outbound/context.h"
#include "outbound/error.h"
#include "outbound/http/message.h"
#include "outbound/http/sender.h"
#include "outbound/http/settings.h"
#include "outbound/runtime.h"

namespace outbound::http {
namespace internal {
struct ClientPeer;  // the library's own tests' view of a client
}  // namespace internal

class Client final : public Sender {
 public:
  // Checks `settings` (every bad field named in one kInvalidSettings error)
  // and builds the client. Dials nothing.
  [[nodiscard]] static Result<std::unique_ptr<Client>> Create(const Runtime& runtime,
                                                              Settings settings);
  // The same, for a program that would rather stop than check: throws
  // outbound::Exception carrying the kInvalidSettings error (its what() names
  // every bad field). Calls never throw on their own: their failures stay
  // values in a Result.
  static std::unique_ptr<Client> CreateOrThrow(const Runtime& runtime, Settings settings);

  // Ends calls still in flight with kCancelled and closes the pooled
  // connections, idle ones included. Must not run on a callback of this
  // client (classify, an observer).
  ~Client() override;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` and waits for the outcome (Sender::Send): what the
  // user's classify or breaker policy throws is rethrown there, after the
  // library has let go of what it held. Sender::SendAsync(request) gives the
  // outcome in a future instead.
  using Sender::Send;
  using Sender::SendAsync;

  // The callback form, for many calls with no thread waiting on each: `done`
  // runs once, on the client's event-loop thread, never on the stack of a
  // call of yours into the library (this SendAsync, a CancelSource::Cancel,
  // even one made in another callback), and must not block or throw. `thrown` carries what the
  // user's classify or breaker policy threw (the result is then an error). Many calls may be in
  // flight at once on the client's one event-loop thread.
  void SendAsync(Request request, Callback done) override;

  // The breaker's state now (read, not tracked: half-open as soon as its
  // open interval has passed).
  circuit::State breaker_state() const;

  // An operator takes over the breaker (circuit::Breaker::SetOverride):
  // force it open, hold it closed, isolate it (held open, no probes), or
  // release a hold. Logged at WARN through the Runtime's logger, counted
  // (outbound.circuit.overrides) and shown by outbound.circuit.state.
  // Thread-safe; for code and for the runtime file alike.
  void OverrideBreaker(circuit::Override override);

  // An operator switches failure injection or the rate limit without a
  // restart (config::RuntimeFile does it from a file): from the next call
  // on, each call sees one whole setting, the old or the new. A new rate
  // limit starts a full bucket; calls already waiting for a token keep
  // their place. Runtime::inject_faults still turns faults on. Logged at
  // WARN through the Runtime's logger. A rate limit CheckRateLimit refuses
  // is an error and changes nothing. Thread-safe.
  void SetFaults(FaultSettings faults);
  [[nodiscard]] Result<void> SetRateLimit(std::optional<RateLimit> limit);
  // What SetFaults and SetRateLimit last set, or the settings' own.
  FaultSettings faults() const;
  std::optional<RateLimit> rate_limit() const;

  // "https://payments:8443".
  const std::string& origin() const;

  // Opens the client's connection now, so that its first call does not pay
  // for it, and says when the connection is usable (the TLS handshake done
  // and, for HTTP/2, the server's SETTINGS received) or why none could be
  // opened: an error naming the dependency (refused, no route, an untrusted
  // certificate, a server that does not speak the protocol), or kDeadline
  // when none opened within Settings::timeout or by the context's earlier
  // deadline. Ready at once when a connection is usable. Sends no request;
  // the breaker and the retry budget count nothing.
  //
  // example: examples/headers/http.cc#warm
  //   if (auto warmed = payments->Warm().get(); !warmed) Log(warmed.error().message());
  [[nodiscard]] std::future<Result<void>> Warm(const Context& context = {});

  // Readiness, latched: false until a connection of this client has been
  // usable (opened by Warm or by a call), true from then on; an outage
  // later is the breaker's business, not readiness'. Opens nothing.
  bool Connected() const;

  // Blocks until no call of this client is in flight (each has been
  // answered), or until `real_limit` of real time has passed: then false.
  // For a test that must know the client is done, and for draining before
  // shutdown. Calls started meanwhile are waited for too.
  bool WaitUntilIdle(std::chrono::milliseconds real_limit = std::chrono::seconds(10)) const;

  struct Impl;

 private:
  friend struct internal::ClientPeer;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_CLIENT_H_
