// SPDX-License-Identifier: Apache-2.0
// Client::Impl: the client's state (settings, breaker, retry budget,
// channel, instruments) and its one loop, Run, which unary calls
// (client.cc) and stream openings (stream.cc) both go through. Private to
// the rpc library.
#ifndef OUTBOUND_SRC_RPC_CLIENT_IMPL_H_
#define OUTBOUND_SRC_RPC_CLIENT_IMPL_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "address.h"
#include "call_parts.h"
#include "outbound/internal/fault_scenario.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/retrier.h"
#include "outbound/rpc/client.h"
#include "outbound/telemetry/metrics.h"
#include "outbound/telemetry/resilience_instruments.h"
#include "outbound/telemetry/trace.h"

namespace outbound::rpc {
namespace internal {

// A blocking call (Call, Invoke, ServerStream, OpenStream while it opens),
// listed with its client from the public method's start to its end, so
// that ~Client can end it and wait until it has left: its attempt in flight
// cancelled, its wait cut short, no further attempt sent. Lives on the
// calling thread's stack.
class BlockingCall {
 public:
  // Lists the call; one that starts while the client is being destroyed is
  // abandoned at once.
  explicit BlockingCall(Client::Impl& client);
  // Unlists it: the last the call touches of the client.
  ~BlockingCall();
  BlockingCall(const BlockingCall&) = delete;
  BlockingCall& operator=(const BlockingCall&) = delete;

  // The client is being destroyed.
  bool abandoned() const { return abandoned_.load(std::memory_order_acquire); }

  // The attempt in flight on `attempt`, until Sent: cancelled at once if
  // the call was abandoned already.
  void Sending(const std::shared_ptr<AttemptContext>& attempt);
  // The attempt has its status; returns it as the caller sees it (a cancel
  // by the client's destruction says so).
  Status Sent(Status status);
  // A wait before an attempt, until Woken: cut short at once if the call
  // was abandoned already.
  void Waiting(const std::shared_ptr<Signal>& wait);
  void Woken();

  // From ~Client, under the client's list lock: ends the call soon.
  void Abandon();

  // The client's list of its blocking calls.
  BlockingCall* listed_before = nullptr;
  BlockingCall* listed_after = nullptr;

 private:
  Client::Impl& client_;
  std::mutex mu_;  // orders Abandon with Sending and Waiting
  std::atomic<bool> abandoned_{false};
  std::shared_ptr<AttemptContext> attempt_;
  std::shared_ptr<Signal> wait_;
};

}  // namespace internal

struct Client::Impl {
  Impl(const Runtime& rt, Settings s, internal::Addr a);

  // One log record per change of the breaker's state: WARN when it opens,
  // INFO otherwise, in the trace of the call that made the change.
  void OnTransition(const circuit::Transition& transition);

  void RecordCall(std::string_view method, const Status& status, Duration took);

  // A CLIENT span for one attempt (or a rejected call), named after the
  // method, as OpenTelemetry's RPC conventions have it; null without a
  // tracer.
  std::unique_ptr<telemetry::Span> StartSpan(std::string_view method, const Context& context) const;

  void EndSpan(telemetry::Span* span, const Status& status) const;

  // A fresh grpc::ClientContext for one attempt: its deadline (kept in
  // `deadlines`), and the trace context and baggage in its metadata.
  std::shared_ptr<internal::AttemptContext> NewContext(const internal::AttemptState& attempt,
                                                       const Context& context);

  // The caller's baggage as the dependency gets it: with faults on, without
  // a failure scenario unless the settings forward it; with faults off,
  // whole (docs/failure-injection.md: nothing is read or stripped).
  telemetry::Baggage SentBaggage(const telemetry::Baggage& baggage) const;

  // Failure injection: the fault the call's scenario holds for this client,
  // if its faults are on (a malformed scenario is ignored, as HTTP's is).
  std::optional<outbound::internal::InjectedFault> FaultFor(const Context& context) const;

  // One attempt as the fault has it: aborted (never sent), answered with a
  // status (never sent), or sent once the delay has passed within the
  // attempt's deadline. Real to everything above: classified, retried,
  // counted by the breaker, on the span.
  template <typename Send>
  Status Inject(const outbound::internal::InjectedFault& fault, internal::AttemptState& attempt,
                const Context& context, Send& send) {
    if (auto answer = InjectedAnswer(fault, attempt)) return *std::move(answer);
    Clock& clock = *runtime.clock;
    TimePoint until = DelayedUntil(fault, attempt);
    if (until > clock.Now()) Sleep(until - clock.Now(), context, attempt.blocking);
    if (auto ended = AfterDelay(attempt, context)) return *std::move(ended);
    return send(attempt);
  }

  // Inject's parts, which an asynchronous call takes one at a time. The
  // status of an attempt the fault does not send (abort, status); none for
  // a delay.
  std::optional<Status> InjectedAnswer(const outbound::internal::InjectedFault& fault,
                                       internal::AttemptState& attempt) const;
  // When a delayed attempt is sent: the delay's end, or the attempt's
  // deadline if that comes first.
  TimePoint DelayedUntil(const outbound::internal::InjectedFault& fault,
                         const internal::AttemptState& attempt) const;
  // Once the delay is over: the status of an attempt that ends unsent (the
  // caller cancelled, the client is going, its deadline passed), or none
  // to send it.
  std::optional<Status> AfterDelay(const internal::AttemptState& attempt,
                                   const Context& context) const;

  Status NoRoute() const;

  // A unary attempt by name, on the generic stub.
  Status SendUnary(const std::string& method, std::string_view request, const Context& context,
                   internal::AttemptState& attempt);

  // A server stream: read to its end on the caller's thread.
  Status SendServerStream(const std::string& method, std::string_view request,
                          const Context& context, const internal::OnMessage& on_message,
                          internal::AttemptState& attempt);

  // The caller's own attempt (a generated stub's method) on a fresh context.
  Status SendOwn(const Client::Attempt& own, const Context& context,
                 internal::AttemptState& attempt);

  // Opens a stream: the attempt succeeds once gRPC has sent the call's
  // headers on a connection; the open stream then takes the attempt's
  // ticket and span.
  Status SendOpen(const std::string& method, const Context& context,
                  internal::AttemptState& attempt, std::unique_ptr<Stream::Impl>& opened);

  // Waits `wait` on the clock, or until the caller cancels or the client
  // abandons the blocking call.
  void Sleep(Duration wait, const Context& context, internal::BlockingCall* blocking);

  // A call's progress through the loop, kept from one attempt to the next.
  struct CallState {
    TimePoint deadline;  // Timeout's or the caller's, the earlier
    // Each attempt's grpc::ClientContext deadline: the call's, or for a
    // stream the caller's alone.
    std::optional<TimePoint> attempt_deadline;
    retry::Loop loop;
    std::optional<outbound::internal::InjectedFault> fault;
    Reply reply;
    internal::BlockingCall* blocking;  // null for an asynchronous call
  };
  CallState StartCall(const Context& context, bool stream, internal::BlockingCall* blocking);

  // The call ends now, whatever its attempts got: its caller cancelled, or
  // the client is being destroyed.
  static bool Stopped(const CallState& call, const Context& context) {
    return internal::Cancelled(context) || (call.blocking != nullptr && call.blocking->abandoned());
  }

  // Admits the call's next attempt into `attempt` (its span started, its
  // ticket taken, the slow-call rule armed), unless the call ends first:
  // the caller cancelled, the client is being destroyed, the deadline
  // passed, or the breaker rejected it (a failed span of its own, nothing
  // sent). Then call.reply says why and it returns false.
  bool NextAttempt(CallState& call, std::string_view method, const Context& context, bool stream,
                   std::optional<internal::AttemptState>& attempt);

  // Whether the call's next attempt gets the scenario's fault.
  bool Injects(const CallState& call) const {
    return call.fault && runtime.random->Uniform() < call.fault->probability;
  }

  // An attempt has its status: classified (the client's own rules first),
  // settled in the breaker, handed to retry::Loop. Returns the wait before
  // the next attempt, or none when the call ends with call.reply. An
  // attempt that opened a stream ends the call, its ticket and span handed
  // over; one that committed (a message reached the caller) is never sent
  // again. Rethrows what classify or the breaker's policy threw.
  std::optional<Duration> Conclude(CallState& call, std::string_view method, const Context& context,
                                   internal::AttemptState& attempt, Status status);

  // The loop of every blocking call: a unary one, a server stream, the
  // caller's own attempt, a stream's opening. For a stream (`stream` set)
  // Timeout bounds only the opening: the retries, and each attempt until
  // it opens (OpeningBound); the open stream has the caller's deadline
  // alone. `send` is called in place (a template, not a std::function:
  // nothing to allocate per call). `blocking` lists the call with the
  // client for ~Client. AsyncCall (async_call.cc) is the same loop for a
  // call that does not block.
  template <typename Send>
  Reply Run(std::string_view method, const Context& context, bool stream,
            internal::BlockingCall& blocking, Send&& send) {
    CallState call = StartCall(context, stream, &blocking);
    for (;;) {
      std::optional<internal::AttemptState> attempt;
      if (!NextAttempt(call, method, context, stream, attempt)) return std::move(call.reply);
      Status status = Injects(call) ? Inject(*call.fault, *attempt, context, send) : send(*attempt);
      status = blocking.Sent(std::move(status));
      std::optional<Duration> wait = Conclude(call, method, context, *attempt, std::move(status));
      if (!wait) return std::move(call.reply);
      Sleep(*wait, context, &blocking);
    }
  }

  void CountSlow(internal::SlowRule& slow);

  void Settle(circuit::Ticket& ticket, circuit::Outcome outcome,
              const telemetry::SpanContext& cause);

  // Asynchronous calls (async_call.cc), each listed from its start until
  // its `done` has returned.
  void Track(internal::AsyncCall* call);
  void Forget(internal::AsyncCall* call);
  // From ~Client: ends every asynchronous call still going (its attempt
  // cancelled, its wait cut short) and waits for their `done`.
  void EndAsyncCalls();
  // From ~Client: abandons every blocking call (BlockingCall) and waits
  // until each has left the client.
  void EndBlockingCalls();

  Runtime runtime;
  Settings settings;
  internal::Addr addr;
  // This client's injection point: "grpc:<host>:<port>".
  std::string fault_point = "grpc:" + addr.host + ":" + std::to_string(addr.port);
  retry::Budget budget;
  retry::Retrier retrier;
  circuit::Breaker breaker;
  // grpc++ runs every deadline on its own real clock, whatever the
  // Runtime's clock is, so the attempts' deadlines here run in real time:
  // the library's one use of the real clock outside it, which goes when
  // the gRPC client moves onto the library's own HTTP/2 transport.
  Clock& grpc_clock = SystemClock();
  // The attempts' deadlines, on grpc_clock (gRPC's own deadline checks are
  // off: see AttemptContext). Shared with every attempt's context, which
  // may outlive the client (a cancel hook of the caller's holds one).
  std::shared_ptr<outbound::internal::TimeoutList> deadlines =
      std::make_shared<outbound::internal::TimeoutList>(grpc_clock);
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<grpc::GenericStub> stub;
  std::shared_ptr<telemetry::Histogram> call_duration;
  // After the breaker and the budget its gauges read, so they are
  // unregistered before those go.
  telemetry::ResilienceInstruments instruments{runtime.telemetry, internal::kScope, addr.host,
                                               std::int64_t{addr.port}};
  std::atomic<bool> connected{false};
  std::mutex async_mu;
  std::condition_variable async_done;          // an asynchronous call was forgotten
  internal::AsyncCall* async_calls = nullptr;  // the newest; each links the next
  std::mutex blocking_mu;
  std::condition_variable blocking_left;             // the last blocking call left, while ending
  internal::BlockingCall* blocking_calls = nullptr;  // the newest; each links the next
  bool ending = false;                               // ~Client has begun
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_SRC_RPC_CLIENT_IMPL_H_
