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
#include "outbound/telemetry/trace.h"

namespace outbound::rpc {

struct Client::Impl {
  Impl(const Runtime& rt, Settings s, internal::Addr a);

  void Count(telemetry::Counter* counter, std::string_view key, std::string_view value) const;

  // One log record per change of the breaker's state: WARN when it opens,
  // INFO otherwise, in the trace of the call that made the change.
  void OnTransition(const circuit::Transition& transition);

  void RecordCall(std::string_view method, const Status& status, Duration took);

  // A CLIENT span for one attempt (or a rejected call), named after the
  // method, as OpenTelemetry's RPC conventions have it; null without a
  // tracer.
  std::unique_ptr<telemetry::Span> StartSpan(std::string_view method, const Context& context) const;

  void EndSpan(telemetry::Span* span, const Status& status) const;

  // A fresh grpc::ClientContext for one attempt: its deadline, and the
  // trace context and baggage in its metadata.
  std::shared_ptr<grpc::ClientContext> NewContext(const internal::AttemptState& attempt,
                                                  const Context& context) const;

  // The caller's baggage as the dependency gets it: without a failure
  // scenario unless the settings forward it.
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
    using Kind = outbound::internal::InjectedFault::Kind;
    static constexpr std::string_view kNames[] = {"abort", "delay", "status"};
    if (attempt.span) {
      attempt.span->SetAttribute({"outbound.fault.injected", kNames[static_cast<int>(fault.kind)]});
    }
    switch (fault.kind) {
      case Kind::kAbort:
        return {Code::kUnavailable, "injected fault: the attempt was aborted"};
      case Kind::kStatus:
        if (fault.retry_after) {
          attempt.trailers.emplace("grpc-retry-pushback-ms",
                                   std::to_string(std::uint64_t{*fault.retry_after} * 1000));
        }
        return {CodeOfHttpStatus(fault.status),
                "injected fault: HTTP status " + std::to_string(fault.status)};
      case Kind::kDelay:
        break;
    }
    Clock& clock = *runtime.clock;
    TimePoint until = clock.Now() + fault.delay;
    if (attempt.deadline && *attempt.deadline < until) until = *attempt.deadline;
    if (until > clock.Now()) Sleep(until - clock.Now(), context);
    if (internal::Cancelled(context)) return {Code::kCancelled, "the caller cancelled the call"};
    if (attempt.deadline && clock.Now() >= *attempt.deadline) {
      return {Code::kDeadlineExceeded, "the deadline passed during an injected delay"};
    }
    return send(attempt);
  }

  // The code gRPC gives an HTTP status (its "HTTP to gRPC status code
  // mapping").
  static Code CodeOfHttpStatus(int status);

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

  // Waits `wait` on the clock, or until the caller cancels.
  void Sleep(Duration wait, const Context& context);

  // The loop of every call: a unary one, a server stream, the caller's own
  // attempt, a stream's opening. Each attempt is admitted by the breaker,
  // made by `send`, classified (the client's own rules first), settled, and
  // handed to retry::Loop, which decides whether and when the next one
  // goes. For a stream (`stream` set) Timeout bounds only the opening: the
  // retries, and each attempt until it opens (OpeningBound); the open
  // stream has the caller's deadline alone. An attempt that committed (a
  // server stream's message reached the caller) is never sent again; one
  // that opened a stream ends the loop, its ticket and span handed over.
  // `send` is called in place (a template, not a std::function: nothing to
  // allocate per call).
  template <typename Send>
  Reply Run(std::string_view method, const Context& context, bool stream, Send&& send) {
    Clock& clock = *runtime.clock;
    TimePoint deadline = clock.Now() + settings.timeout;
    if (context.deadline && *context.deadline < deadline) deadline = *context.deadline;
    std::optional<TimePoint> attempt_deadline = deadline;
    if (stream) attempt_deadline = context.deadline;
    retry::Loop loop = retrier.Start(deadline);
    std::optional<outbound::internal::InjectedFault> fault = FaultFor(context);
    Reply reply;
    for (;;) {
      // Nothing is sent once the caller gave up or the deadline passed; the
      // call ends with what the last attempt got, if any.
      if (internal::Cancelled(context)) {
        if (reply.attempts == 0) reply.status = {Code::kCancelled, "the caller cancelled the call"};
        return reply;
      }
      if (clock.Now() >= deadline) {
        if (reply.attempts == 0) {
          reply.status = {Code::kDeadlineExceeded, "the call's deadline passed"};
        }
        return reply;
      }
      auto admitted = [&] {
        internal::CauseScope cause(&context.trace);
        return breaker.Allow(clock.Now());
      }();
      if (!admitted) {
        Count(breaker_calls.get(), "outcome", "rejected");
        Count(decisions.get(), "decision", retry::ToString(retry::DecisionKind::kStopped));
        reply.body.clear();
        reply.trailers.clear();
        reply.status = {Code::kUnavailable,
                        "circuit breaker open: call rejected, retry after " +
                            internal::Millis(admitted.error().retry_after),
                        true};
        // The rejected call gets a failed span of its own: nothing was sent.
        auto span = StartSpan(method, context);
        if (span) span->SetAttribute({"outbound.rejected", true});
        EndSpan(span.get(), reply.status);
        return reply;
      }
      ++reply.attempts;
      internal::AttemptState attempt{attempt_deadline, StartSpan(method, context),
                                     std::move(*admitted)};
      std::shared_ptr<SlowRule> slow;  // only when the rule is on (slow_call set)
      Timer slow_timer;
      if (stream) attempt.open_by = deadline;
      if (!stream && settings.breaker.slow_call > Duration::zero()) {
        slow = std::make_shared<SlowRule>(&attempt.ticket);
        slow_timer = clock.ScheduleAfter(settings.breaker.slow_call,
                                         [this, slow, &context] { CountSlow(*slow, context); });
      }
      bool injected = fault && runtime.random->Uniform() < fault->probability;
      reply.status = injected ? Inject(*fault, attempt, context, send) : send(attempt);
      if (slow) {
        slow->Disarm();
        slow_timer.Cancel();
        if (slow->thrown) std::rethrow_exception(slow->thrown);  // the user's policy
      }
      reply.body = std::move(attempt.body);
      reply.trailers = std::move(attempt.trailers);
      if (attempt.opened) {
        // A stream that opened is a Success for retry, without asking
        // classify; its end settles the ticket and ends the span.
        retry::Decision decision = loop.Done(retry::Outcome::kSuccess, Duration::zero(),
                                             clock.Now(), runtime.random->Uniform());
        Count(decisions.get(), "decision", retry::ToString(decision.kind));
        return reply;
      }
      EndSpan(attempt.span.get(), reply.status);

      Classification c;
      if (internal::Cancelled(context)) {
        c = {retry::Outcome::kStop, Duration::zero(), circuit::Outcome::kIgnored};
      } else if (!reply.status.ok() && clock.Now() >= deadline) {
        c = {retry::Outcome::kStop, Duration::zero(), circuit::Outcome::kFailure};
      } else {
        // A classify that throws leaves the ticket unsettled: its destructor
        // frees the slot, and the exception reaches the caller.
        c = settings.classify(method, reply.status, reply.trailers);
      }
      if (c.retry == retry::Outcome::kRetry && c.retry_after < Duration::zero()) {
        c.retry = retry::Outcome::kStop;
      }
      if (attempt.committed) {  // an open stream is never sent again
        c.retry = reply.status.ok() ? retry::Outcome::kSuccess : retry::Outcome::kStop;
      }
      if (!slow || !slow->counted) Settle(attempt.ticket, c.breaker, context);
      retry::Decision decision =
          loop.Done(c.retry, c.retry_after, clock.Now(), runtime.random->Uniform());
      Count(decisions.get(), "decision", retry::ToString(decision.kind));
      if (decision.kind != retry::DecisionKind::kAgain) return reply;
      Sleep(decision.wait, context);
    }
  }

  // The breaker's slow-call rule (Config::slow_call): a unary attempt not
  // answered `slow_call` after it was sent is counted a failure then, on the
  // clock's thread, so a hung dependency opens the breaker long before the
  // attempt's Timeout; the attempt goes on, and its result is not counted
  // again. Streams are left out: their life is the caller's.
  struct SlowRule {
    explicit SlowRule(circuit::Ticket* t) : ticket(t) {}
    // The attempt has its result: the rule leaves the ticket alone.
    void Disarm() {
      std::lock_guard lock(mu);
      ticket = nullptr;
    }
    std::mutex mu;
    circuit::Ticket* ticket;  // null once disarmed
    bool counted = false;
    std::exception_ptr thrown;  // what the user's breaker policy threw
  };

  void CountSlow(SlowRule& slow, const Context& context);

  void Settle(circuit::Ticket& ticket, circuit::Outcome outcome, const Context& context);

  Runtime runtime;
  Settings settings;
  internal::Addr addr;
  // This client's injection point: "grpc:<host>:<port>".
  std::string fault_point = "grpc:" + addr.host + ":" + std::to_string(addr.port);
  retry::Budget budget;
  retry::Retrier retrier;
  circuit::Breaker breaker;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<grpc::GenericStub> stub;
  std::shared_ptr<telemetry::Histogram> call_duration;
  std::shared_ptr<telemetry::Counter> transitions;
  std::shared_ptr<telemetry::Counter> breaker_calls;
  std::shared_ptr<telemetry::Counter> decisions;
  // Last, so they are unregistered before anything they read goes away.
  std::unique_ptr<telemetry::GaugeRegistration> state_gauge;
  std::unique_ptr<telemetry::GaugeRegistration> tokens_gauge;
  std::atomic<bool> connected{false};
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_SRC_RPC_CLIENT_IMPL_H_
