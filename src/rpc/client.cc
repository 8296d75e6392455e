// SPDX-License-Identifier: Apache-2.0
// The attempts of one call, each admitted by the breaker, sent on a fresh
// grpc::ClientContext, classified (the client's own rules first, then
// Settings::classify), settled in the breaker, and handed to retry::Loop,
// which decides whether and when the next one goes. Waits run on the
// Runtime's clock. One loop (Client::Impl::Run) serves a unary call, the
// caller's own attempt (a generated stub's method), a server stream, and a
// stream's opening; an open Stream holds its ticket until it ends.
#include "outbound/rpc/client.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <grpcpp/alarm.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "address.h"
#include "outbound/internal/fault_scenario.h"
#include "outbound/telemetry/breaker_record.h"
#include "outbound/telemetry/metrics.h"
#include "outbound/telemetry/propagation.h"
#include "outbound/telemetry/trace.h"

namespace outbound::rpc {
namespace {

// Blocks until notified: by a timer on the clock, an attempt's completion
// or the caller's cancel.
struct Signal {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;

  void Notify() {
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return done; });
  }
};

// Registers fn with the caller's cancel for this scope. fn becomes a
// std::function (which may allocate) only when the caller can cancel.
class CancelHook {
 public:
  template <typename Fn>
  CancelHook(const Context& context, Fn&& fn) : state_(context.cancel) {
    if (state_) id_ = state_->OnCancel(std::forward<Fn>(fn));
  }
  ~CancelHook() {
    if (state_ && id_ >= 0) state_->Forget(id_);
  }
  CancelHook(const CancelHook&) = delete;
  CancelHook& operator=(const CancelHook&) = delete;

 private:
  std::shared_ptr<outbound::internal::CancelState> state_;
  int id_ = -1;
};

bool Cancelled(const Context& context) { return context.cancel && context.cancel->cancelled(); }

std::string Bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

std::string ToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

// A serialised message as grpc++ sends it (one copied slice).
grpc::ByteBuffer ToByteBuffer(std::string_view bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

std::string Millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

// "/pkg.Service/Method" as its service and method.
std::pair<std::string_view, std::string_view> SplitMethod(std::string_view full) {
  if (!full.empty() && full.front() == '/') full.remove_prefix(1);
  auto slash = full.find('/');
  if (slash == std::string_view::npos) return {full, {}};
  return {full.substr(0, slash), full.substr(slash + 1)};
}

constexpr std::string_view kScope = "outbound.rpc";

std::string_view CodeName(Code code) {
  static constexpr std::string_view kNames[] = {"OK",
                                                "CANCELLED",
                                                "UNKNOWN",
                                                "INVALID_ARGUMENT",
                                                "DEADLINE_EXCEEDED",
                                                "NOT_FOUND",
                                                "ALREADY_EXISTS",
                                                "PERMISSION_DENIED",
                                                "RESOURCE_EXHAUSTED",
                                                "FAILED_PRECONDITION",
                                                "ABORTED",
                                                "OUT_OF_RANGE",
                                                "UNIMPLEMENTED",
                                                "INTERNAL",
                                                "UNAVAILABLE",
                                                "DATA_LOSS",
                                                "UNAUTHENTICATED"};
  auto i = static_cast<std::size_t>(code);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
}

// The trace of the call whose Allow or Settle is running on this thread:
// a breaker transition's log record carries it.
thread_local const telemetry::SpanContext* current_cause = nullptr;

class CauseScope {
 public:
  explicit CauseScope(const telemetry::SpanContext* cause) : saved_(current_cause) {
    current_cause = cause;
  }
  ~CauseScope() { current_cause = saved_; }
  CauseScope(const CauseScope&) = delete;
  CauseScope& operator=(const CauseScope&) = delete;

 private:
  const telemetry::SpanContext* saved_;
};

using OnMessage = std::function<void(std::string_view)>;

Status ToStatus(const grpc::Status& status) {
  return Status{static_cast<Code>(status.error_code()), status.error_message()};
}

void ReadTrailers(const grpc::ClientContext& cc, Trailers& trailers) {
  for (const auto& [name, value] : cc.GetServerTrailingMetadata()) {
    trailers.emplace(std::string(name.data(), name.size()),
                     std::string(value.data(), value.size()));
  }
}

// One attempt, once the breaker admitted it: what it is made with, and
// what it reports back to the loop.
struct AttemptState {
  std::optional<TimePoint> deadline;      // for the attempt's grpc::ClientContext
  std::unique_ptr<telemetry::Span> span;  // null without a tracer
  circuit::Ticket ticket;                 // settled by the loop, unless a stream took it
  std::string body;                       // a unary response's bytes
  Trailers trailers;                      // the server's trailing metadata
  bool committed = false;                 // a message reached the caller: never sent again
  bool opened = false;                    // a stream opened and took the ticket and span
  std::optional<TimePoint> open_by;       // a stream's: when its opening gives up
};

// An attempt's remaining time as gRPC's clock runs it: the Runtime's clock
// decides how much is left, gRPC's clock when it ends.
gpr_timespec Remaining(const Clock& clock, TimePoint until) {
  return gpr_time_from_nanos(std::max(until - clock.Now(), Duration::zero()).count(), GPR_TIMESPAN);
}

// Timeout bounds a stream's opening, though the open stream has only the
// caller's deadline: a connection that hangs while it is made (a TLS
// handshake nobody answers, a connect the network drops) would otherwise
// hold the opening until gRPC's own connect timeout, 20 s. At open_by the
// attempt's context is cancelled unless the stream opened first, and the
// attempt ends DEADLINE_EXCEEDED.
class OpeningBound {
 public:
  OpeningBound(const Clock& clock, std::optional<TimePoint> by,
               std::shared_ptr<grpc::ClientContext> cc)
      : state_(std::make_shared<State>()) {
    if (!by) return;
    state_->cc = std::move(cc);
    // The callback keeps the state: it may run (cancelled) after the bound is gone.
    alarm_.Set(gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), Remaining(clock, *by)),
               [state = state_](bool fired) {
                 std::lock_guard lock(state->mu);
                 if (!fired || state->opened) return;
                 state->expired = true;
                 state->cc->TryCancel();
               });
  }
  ~OpeningBound() { alarm_.Cancel(); }
  OpeningBound(const OpeningBound&) = delete;
  OpeningBound& operator=(const OpeningBound&) = delete;

  // The stream opened: true unless the bound expired first (then its
  // context is cancelled and the stream must be ended).
  bool Opened() {
    std::lock_guard lock(state_->mu);
    if (state_->expired) return false;
    state_->opened = true;
    return true;
  }

  bool expired() const {
    std::lock_guard lock(state_->mu);
    return state_->expired;
  }

  static Status Expired() {
    return {Code::kDeadlineExceeded, "the stream did not open before the call's deadline"};
  }

 private:
  struct State {
    std::mutex mu;
    bool opened = false;
    bool expired = false;
    std::shared_ptr<grpc::ClientContext> cc;
  };
  std::shared_ptr<State> state_;
  grpc::Alarm alarm_;
};

// A stream's completion queue, waited on by whichever of the stream's
// threads needs a result (a reader and a writer may wait at once): the
// thread that polls records what the others wait for and wakes them. So a
// stream costs no thread of its own.
class Completions {
 public:
  Completions() = default;
  // Every operation started on the queue must have been waited for.
  ~Completions() {
    queue_.Shutdown();
    void* tag;
    bool ok;
    while (queue_.Next(&tag, &ok)) {
    }
  }
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  grpc::CompletionQueue* queue() { return &queue_; }

  // Blocks until the operation started with `tag` completes; its ok.
  bool Wait(const void* tag) {
    std::unique_lock lock(mu_);
    for (;;) {
      auto it = std::find_if(done_.begin(), done_.end(),
                             [tag](const auto& entry) { return entry.first == tag; });
      if (it != done_.end()) {
        bool ok = it->second;
        done_.erase(it);
        return ok;
      }
      if (polling_) {
        cv_.wait(lock);
        continue;
      }
      polling_ = true;
      lock.unlock();
      void* got = nullptr;
      bool ok = false;
      bool alive = queue_.Next(&got, &ok);
      lock.lock();
      polling_ = false;
      if (alive) done_.emplace_back(got, ok);
      cv_.notify_all();
      if (!alive) return false;  // not reached: the queue shuts down in the destructor
    }
  }

 private:
  grpc::CompletionQueue queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool polling_ = false;
  std::vector<std::pair<const void*, bool>> done_;
};

}  // namespace

struct Client::Impl {
  Impl(const Runtime& rt, Settings s, internal::Addr a)
      : runtime(rt),
        settings(std::move(s)),
        addr(std::move(a)),
        budget(settings.retry_budget),
        retrier(retry::Policy{settings.max_attempts,
                              retry::Exponential(settings.backoff_base, settings.backoff_max)},
                budget),
        breaker(
            settings.breaker, settings.breaker_policy,
            [this](const circuit::Transition& t) { OnTransition(t); }, runtime.random) {
    telemetry::MeterProvider* meters = runtime.telemetry.meters;
    if (meters == nullptr) return;
    call_duration =
        meters->CreateHistogram({kScope, "rpc.client.call.duration", "s",
                                 "The duration of a unary call, its retries and waits included"},
                                telemetry::kDurationBuckets);
    transitions = meters->CreateCounter({kScope, "outbound.circuit.transitions", "{transition}",
                                         "Changes of a circuit breaker's state, by new state."});
    breaker_calls = meters->CreateCounter({kScope, "outbound.circuit.calls", "{call}",
                                           "Attempts a circuit breaker counted, by outcome."});
    decisions = meters->CreateCounter({kScope, "outbound.retry.decisions", "{decision}",
                                       "What the retry loop decided after each attempt."});
    state_gauge = meters->AddObservableGauge(
        {kScope, "outbound.circuit.state", "{breaker}", "Circuit breakers in each state."},
        [this](telemetry::Observations& out) {
          circuit::State now = breaker.state(runtime.clock->Now());
          for (circuit::State state :
               {circuit::State::kClosed, circuit::State::kOpen, circuit::State::kHalfOpen}) {
            const telemetry::KeyValue attributes[] = {
                {"server.address", std::string_view(addr.host)},
                {"server.port", std::int64_t{addr.port}},
                {"state", circuit::ToString(state)}};
            out.Observe(state == now ? 1 : 0, attributes);
          }
        });
    tokens_gauge = meters->AddObservableGauge(
        {kScope, "outbound.retry.budget.tokens", "{token}",
         "Tokens left in a client's retry budget; retries stop at half."},
        [this](telemetry::Observations& out) {
          const telemetry::KeyValue attributes[] = {{"server.address", std::string_view(addr.host)},
                                                    {"server.port", std::int64_t{addr.port}}};
          out.Observe(budget.tokens(), attributes);
        });
  }

  void Count(telemetry::Counter* counter, std::string_view key, std::string_view value) {
    if (counter == nullptr) return;
    const telemetry::KeyValue attributes[] = {{"server.address", std::string_view(addr.host)},
                                              {"server.port", std::int64_t{addr.port}},
                                              {key, value}};
    counter->Add(1, attributes);
  }

  // One log record per change of the breaker's state: WARN when it opens,
  // INFO otherwise, in the trace of the call that made the change.
  void OnTransition(const circuit::Transition& transition) {
    Count(transitions.get(), "state", circuit::ToString(transition.to));
    telemetry::Logger* logger = runtime.telemetry.logger;
    if (logger == nullptr) return;
    logger->Emit(telemetry::BreakerTransitionRecord(kScope, addr.host, std::int64_t{addr.port},
                                                    transition, current_cause));
  }

  void RecordCall(std::string_view method, const Status& status, Duration took) {
    if (!call_duration) return;
    auto [service, rpc_method] = SplitMethod(method);
    const telemetry::KeyValue attributes[] = {
        {"rpc.system", std::string_view("grpc")},
        {"rpc.service", service},
        {"rpc.method", rpc_method},
        {"rpc.grpc.status_code", static_cast<std::int64_t>(status.code)},
        {"server.address", std::string_view(addr.host)},
    };
    call_duration->Record(std::chrono::duration<double>(took).count(), attributes);
  }

  // A CLIENT span for one attempt (or a rejected call), named after the
  // method, as OpenTelemetry's RPC conventions have it; null without a
  // tracer.
  std::unique_ptr<telemetry::Span> StartSpan(std::string_view method, const Context& context) {
    telemetry::Tracer* tracer = runtime.telemetry.tracer;
    if (tracer == nullptr) return nullptr;
    std::string_view name = method;
    if (!name.empty() && name.front() == '/') name.remove_prefix(1);
    auto [service, rpc_method] = SplitMethod(method);
    auto span =
        tracer->StartSpan({kScope, name, telemetry::SpanKind::kClient,
                           context.trace.valid() ? &context.trace : nullptr, runtime.clock->Now()});
    span->SetAttribute({"rpc.system", std::string_view("grpc")});
    span->SetAttribute({"rpc.service", service});
    span->SetAttribute({"rpc.method", rpc_method});
    span->SetAttribute({"server.address", std::string_view(addr.host)});
    span->SetAttribute({"server.port", static_cast<std::int64_t>(addr.port)});
    return span;
  }

  void EndSpan(telemetry::Span* span, const Status& status) {
    if (span == nullptr) return;
    span->SetAttribute({"rpc.grpc.status_code", static_cast<std::int64_t>(status.code)});
    if (!status.ok()) {
      span->SetAttribute({"error.type", CodeName(status.code)});
      span->SetStatus(telemetry::StatusCode::kError, status.message);
    }
    span->End(runtime.clock->Now());
  }

  // A fresh grpc::ClientContext for one attempt: its deadline, and the
  // trace context and baggage in its metadata.
  std::shared_ptr<grpc::ClientContext> NewContext(const AttemptState& attempt,
                                                  const Context& context) {
    auto cc = std::make_shared<grpc::ClientContext>();
    if (attempt.deadline) cc->set_deadline(Remaining(*runtime.clock, *attempt.deadline));
    // The attempt's trace context: its own span's, or the caller's.
    const telemetry::SpanContext* trace = attempt.span ? &attempt.span->context() : &context.trace;
    if (trace->valid()) {
      cc->AddMetadata("traceparent", telemetry::FormatTraceparent(*trace));
      if (!trace->trace_state.empty()) cc->AddMetadata("tracestate", trace->trace_state);
    }
    if (!context.baggage.empty()) {
      cc->AddMetadata("baggage", telemetry::FormatBaggage(SentBaggage(context.baggage)));
    }
    return cc;
  }

  // The caller's baggage as the dependency gets it: without a failure
  // scenario unless the settings forward it.
  telemetry::Baggage SentBaggage(const telemetry::Baggage& baggage) const {
    if (settings.faults.forward_scenario ||
        telemetry::FindBaggage(baggage, outbound::internal::kFaultBaggageKey) == nullptr) {
      return baggage;
    }
    telemetry::Baggage sent = baggage;
    std::erase_if(sent, [](const telemetry::BaggageEntry& entry) {
      return entry.key == outbound::internal::kFaultBaggageKey;
    });
    return sent;
  }

  // Failure injection: the fault the call's scenario holds for this client,
  // if its faults are on (a malformed scenario is ignored, as HTTP's is).
  std::optional<outbound::internal::InjectedFault> FaultFor(const Context& context) const {
    if (!settings.faults.enabled) return std::nullopt;
    const std::string* scenario =
        telemetry::FindBaggage(context.baggage, outbound::internal::kFaultBaggageKey);
    if (scenario == nullptr) return std::nullopt;
    auto fault = outbound::internal::ParseFaultScenario(*scenario, fault_point);
    return fault ? *fault : std::nullopt;
  }

  // One attempt as the fault has it: aborted (never sent), answered with a
  // status (never sent), or sent once the delay has passed within the
  // attempt's deadline. Real to everything above: classified, retried,
  // counted by the breaker, on the span.
  template <typename Send>
  Status Inject(const outbound::internal::InjectedFault& fault, AttemptState& attempt,
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
    if (Cancelled(context)) return {Code::kCancelled, "the caller cancelled the call"};
    if (attempt.deadline && clock.Now() >= *attempt.deadline) {
      return {Code::kDeadlineExceeded, "the deadline passed during an injected delay"};
    }
    return send(attempt);
  }

  // The code gRPC gives an HTTP status (its "HTTP to gRPC status code
  // mapping").
  static Code CodeOfHttpStatus(int status) {
    switch (status) {
      case 400:
        return Code::kInternal;
      case 401:
        return Code::kUnauthenticated;
      case 403:
        return Code::kPermissionDenied;
      case 404:
        return Code::kUnimplemented;
      case 429:
      case 502:
      case 503:
      case 504:
        return Code::kUnavailable;
      default:
        return Code::kUnknown;
    }
  }

  Status NoRoute() const {
    return Status{Code::kUnavailable, "the name " + addr.host + " does not exist on this network"};
  }

  // A unary attempt by name, on the generic stub.
  Status SendUnary(const std::string& method, std::string_view request, const Context& context,
                   AttemptState& attempt) {
    if (!stub) return NoRoute();
    auto cc = NewContext(attempt, context);
    grpc::ByteBuffer request_buffer = ToByteBuffer(request);
    grpc::ByteBuffer response_buffer;
    grpc::Status status;
    auto signal = std::make_shared<Signal>();
    {
      CancelHook hook(context, [cc] { cc->TryCancel(); });
      stub->UnaryCall(cc.get(), method, grpc::StubOptions(), &request_buffer, &response_buffer,
                      [&status, signal](grpc::Status s) {
                        status = std::move(s);
                        signal->Notify();
                      });
      signal->Wait();
    }
    ReadTrailers(*cc, attempt.trailers);
    if (status.ok()) attempt.body = ToString(response_buffer);
    return ToStatus(status);
  }

  // A server stream: read to its end on the caller's thread.
  Status SendServerStream(const std::string& method, std::string_view request,
                          const Context& context, const OnMessage& on_message,
                          AttemptState& attempt) {
    if (!stub) return NoRoute();
    auto cc = NewContext(attempt, context);
    grpc::ByteBuffer request_buffer = ToByteBuffer(request);
    grpc::ByteBuffer response_buffer;
    CancelHook hook(context, [cc] { cc->TryCancel(); });
    OpeningBound bound(*runtime.clock, attempt.open_by, cc);
    // Returns once the request is sent: the stream is open.
    std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
        grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
            channel.get(),
            grpc::internal::RpcMethod(method.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING),
            cc.get(), request_buffer));
    if (!bound.Opened()) {
      reader->Finish();
      ReadTrailers(*cc, attempt.trailers);
      return OpeningBound::Expired();
    }
    try {
      while (reader->Read(&response_buffer)) {
        attempt.committed = true;  // a message reached the caller
        on_message(ToString(response_buffer));
      }
    } catch (...) {  // the caller's callback threw: end the stream, then pass it on
      cc->TryCancel();
      reader->Finish();
      throw;
    }
    grpc::Status status = reader->Finish();
    ReadTrailers(*cc, attempt.trailers);
    return ToStatus(status);
  }

  // The caller's own attempt (a generated stub's method) on a fresh context.
  Status SendOwn(const Client::Attempt& own, const Context& context, AttemptState& attempt) {
    if (!channel) return NoRoute();
    auto cc = NewContext(attempt, context);
    CancelHook hook(context, [cc] { cc->TryCancel(); });
    Status status = own(cc.get());
    ReadTrailers(*cc, attempt.trailers);
    return status;
  }

  // Opens a stream: the attempt succeeds once gRPC has sent the call's
  // headers on a connection; the open stream then takes the attempt's
  // ticket and span.
  Status SendOpen(const std::string& method, const Context& context, AttemptState& attempt,
                  std::unique_ptr<Stream::Impl>& opened);

  // Waits `wait` on the clock, or until the caller cancels.
  void Sleep(Duration wait, const Context& context) {
    auto signal = std::make_shared<Signal>();
    CancelHook hook(context, [signal] { signal->Notify(); });
    Timer timer = runtime.clock->ScheduleAfter(wait, [signal] { signal->Notify(); });
    signal->Wait();
  }

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
      if (Cancelled(context)) {
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
        CauseScope cause(&context.trace);
        return breaker.Allow(clock.Now());
      }();
      if (!admitted) {
        Count(breaker_calls.get(), "outcome", "rejected");
        Count(decisions.get(), "decision", retry::ToString(retry::DecisionKind::kStopped));
        reply.body.clear();
        reply.trailers.clear();
        reply.status = {Code::kUnavailable,
                        "circuit breaker open: call rejected, retry after " +
                            Millis(admitted.error().retry_after),
                        true};
        // The rejected call gets a failed span of its own: nothing was sent.
        auto span = StartSpan(method, context);
        if (span) span->SetAttribute({"outbound.rejected", true});
        EndSpan(span.get(), reply.status);
        return reply;
      }
      ++reply.attempts;
      AttemptState attempt{attempt_deadline, StartSpan(method, context), std::move(*admitted)};
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
      if (Cancelled(context)) {
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

  void CountSlow(SlowRule& slow, const Context& context) {
    std::lock_guard lock(slow.mu);
    if (slow.ticket == nullptr || slow.ticket->settled()) return;
    slow.counted = true;
    try {
      Settle(*slow.ticket, circuit::Outcome::kFailure, context);
    } catch (...) {  // settled all the same; the caller hears of it
      slow.thrown = std::current_exception();
    }
  }

  void Settle(circuit::Ticket& ticket, circuit::Outcome outcome, const Context& context) {
    CauseScope cause(&context.trace);
    Count(breaker_calls.get(), "outcome", circuit::ToString(outcome));
    ticket.Settle(outcome, runtime.clock->Now());
  }

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

Result<std::unique_ptr<Client>> Client::Create(const Runtime& runtime, Settings settings) {
  if (auto valid = Validate(settings); !valid) return tl::unexpected(valid.error());
  settings.faults.enabled = settings.faults.enabled || runtime.inject_faults;
  auto addr = internal::ParseAddr(settings.addr);
  if (!addr) return tl::unexpected(addr.error());
  auto impl = std::make_unique<Impl>(runtime, std::move(settings), *addr);

  grpc::ChannelArguments args;
  // gRPC's configurable retries need a retryPolicy from a service config,
  // and no service config can come (none is given, none is looked up): the
  // library's loop does the retrying. Retries stay enabled for what is left
  // of them, gRFC A6's transparent retry of an RPC the server never saw (a
  // stream caught by a GOAWAY, from MaxConnectionAge or a rollout): sending
  // it again is always safe and no failure of the dependency, as HTTP's
  // unprocessed attempts are not.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);  // no proxy from the environment
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, impl->settings.addr);

  Route route = runtime.network->Resolve(addr->host, addr->port);
  std::string target;
  switch (route.kind) {
    case Route::Kind::kSystem:
      target = "dns:///" + Bracketed(addr->host) + ":" + std::to_string(addr->port);
      break;
    case Route::Kind::kEndpoint:
      target = (route.address.find(':') != std::string::npos ? "ipv6:[" + route.address + "]"
                                                             : "ipv4:" + route.address) +
               ":" + std::to_string(route.port);
      break;
    case Route::Kind::kUnreachable:
      break;  // no channel: every attempt fails UNAVAILABLE
  }
  if (!target.empty()) {
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    if (const auto& tls = impl->settings.tls) {
      grpc::SslCredentialsOptions options;
      options.pem_root_certs = tls->root_pem;
      options.pem_private_key = tls->client_key_pem;
      options.pem_cert_chain = tls->client_cert_pem;
      credentials = grpc::SslCredentials(options);
      args.SetSslTargetNameOverride(addr->host);
    } else {
      credentials = grpc::InsecureChannelCredentials();
    }
    impl->channel = grpc::CreateCustomChannel(target, credentials, args);
    impl->stub = std::make_unique<grpc::GenericStub>(impl->channel);
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Reply Client::Call(std::string_view method_view, std::string_view request, const Context& context) {
  const std::string method(method_view);
  TimePoint start = impl_->runtime.clock->Now();
  Reply reply = impl_->Run(method, context, /*stream=*/false, [&](AttemptState& attempt) {
    return impl_->SendUnary(method, request, context, attempt);
  });
  impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
  return reply;
}

Reply Client::Invoke(std::string_view method, const Attempt& own, const Context& context) {
  TimePoint start = impl_->runtime.clock->Now();
  Reply reply = impl_->Run(method, context, /*stream=*/false, [&](AttemptState& attempt) {
    return impl_->SendOwn(own, context, attempt);
  });
  impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
  return reply;
}

std::shared_ptr<grpc::Channel> Client::channel() const { return impl_->channel; }

bool Client::Connected(Duration wait) {
  Impl& impl = *impl_;
  if (impl.connected.load(std::memory_order_acquire)) return true;
  if (!impl.channel) return false;
  // One absolute end for the whole check, on gRPC's monotonic clock.
  gpr_timespec end = gpr_convert_clock_type(
      gpr_time_from_nanos(std::max(wait, Duration::zero()).count(), GPR_TIMESPAN),
      GPR_CLOCK_MONOTONIC);
  grpc_connectivity_state state = impl.channel->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY && state != GRPC_CHANNEL_SHUTDOWN) {
    if (!impl.channel->WaitForStateChange(state, end)) break;  // the check's time is up
    state = impl.channel->GetState(/*try_to_connect=*/true);
  }
  if (state != GRPC_CHANNEL_READY) return false;
  impl.connected.store(true, std::memory_order_release);
  return true;
}

Reply Client::ServerStream(std::string_view method_view, std::string_view request,
                           const std::function<void(std::string_view message)>& on_message,
                           const Context& context) {
  const std::string method(method_view);
  TimePoint start = impl_->runtime.clock->Now();
  Reply reply = impl_->Run(method, context, /*stream=*/true, [&](AttemptState& attempt) {
    return impl_->SendServerStream(method, request, context, on_message, attempt);
  });
  impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
  return reply;
}

// --- Stream ---

// An open stream's call, or the status of one that never opened.
struct Stream::Impl {
  Impl(Client::Impl& owner, std::string name, const Context& caller)
      : client(&owner), method(std::move(name)), context(caller) {}
  ~Impl() {
    if (!finished) End(/*abandoned=*/true);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Starts the call and waits until its headers are sent (ok), it failed,
  // or open_by passed.
  Status Open(grpc::GenericStub& stub, std::optional<TimePoint> open_by) {
    call = stub.PrepareCall(cc.get(), method, completions.queue());
    if (call == nullptr) return Status{Code::kInternal, "gRPC did not prepare the call"};
    hook = std::make_unique<CancelHook>(context, [cc = cc] { cc->TryCancel(); });
    OpeningBound bound(*client->runtime.clock, open_by, cc);
    call->StartCall(&start_tag);
    if (completions.Wait(&start_tag) && bound.Opened()) return Status{};
    grpc::Status failed;
    call->Finish(&failed, &finish_tag);
    completions.Wait(&finish_tag);
    call.reset();
    finished = true;  // nothing of it is left to end
    return bound.expired() ? OpeningBound::Expired() : ToStatus(failed);
  }

  void EndLocally(Status why) {
    {
      std::lock_guard lock(mu);
      if (!local) local = std::move(why);
    }
    if (cc) cc->TryCancel();
  }

  // Ends the call, once: cancelled when abandoned, else half-closed and read
  // to its end; then settles the ticket and ends the span.
  Status End(bool abandoned) {
    finished = true;
    if (call == nullptr) return status;  // it never opened
    bool ended_locally = false;
    {
      std::lock_guard lock(mu);
      ended_locally = local.has_value();
    }
    if (abandoned || ended_locally) {
      cc->TryCancel();
    } else {
      if (!writes_done) {
        call->WritesDone(&write_tag);
        completions.Wait(&write_tag);
        writes_done = true;
      }
      grpc::ByteBuffer unread;
      while (!read_done) {
        call->Read(&unread, &read_tag);
        read_done = !completions.Wait(&read_tag);
      }
    }
    grpc::Status final_status;
    call->Finish(&final_status, &finish_tag);
    completions.Wait(&finish_tag);
    ReadTrailers(*cc, trailers);
    {
      std::lock_guard lock(mu);
      status = local ? *local : ToStatus(final_status);
    }
    Client::Impl& owner = *client;
    owner.EndSpan(span.get(), status);
    owner.RecordCall(method, status, owner.runtime.clock->Now() - start);
    circuit::Outcome outcome = circuit::Outcome::kIgnored;
    if (!abandoned && !ended_locally && !Cancelled(context)) {
      // May throw: the ticket stays unsettled and frees its slot when the
      // stream goes.
      outcome = owner.settings.classify(method, status, trailers).breaker;
    }
    owner.Settle(*ticket, outcome, context);
    return status;
  }

  Client::Impl* client;
  const std::string method;
  const Context context;
  TimePoint start;
  int attempts = 0;

  // Destroyed last: the call below holds the queue until it goes.
  Completions completions;
  std::shared_ptr<grpc::ClientContext> cc;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call;  // null unless open
  std::unique_ptr<CancelHook> hook;
  std::optional<circuit::Ticket> ticket;
  std::unique_ptr<telemetry::Span> span;
  // One operation of each kind at a time (a writer, a reader, Finish), so a
  // tag per kind.
  char start_tag = 0, write_tag = 0, read_tag = 0, finish_tag = 0;

  bool writes_done = false;  // the writer's
  bool read_done = false;    // the reader's
  bool finished = false;     // Finish's or the destructor's
  std::mutex mu;
  std::optional<Status> local;  // why the client ended the stream itself
  Status status;
  Trailers trailers;
};

Stream Client::OpenStream(std::string_view method_view, const Context& context) {
  const std::string method(method_view);
  TimePoint start = impl_->runtime.clock->Now();
  std::unique_ptr<Stream::Impl> opened;
  Reply reply = impl_->Run(method, context, /*stream=*/true, [&](AttemptState& attempt) {
    return impl_->SendOpen(method, context, attempt, opened);
  });
  if (opened == nullptr) {  // it never opened: a stream that only reports why
    impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
    opened = std::make_unique<Stream::Impl>(*impl_, method, context);
    opened->status = std::move(reply.status);
    opened->trailers = std::move(reply.trailers);
  }
  opened->start = start;
  opened->attempts = reply.attempts;
  return Stream(std::move(opened));
}

Status Client::Impl::SendOpen(const std::string& method, const Context& context,
                              AttemptState& attempt, std::unique_ptr<Stream::Impl>& opened) {
  if (!stub) return NoRoute();
  auto stream = std::make_unique<Stream::Impl>(*this, method, context);
  stream->cc = NewContext(attempt, context);
  Status status = stream->Open(*stub, attempt.open_by);
  if (!status.ok()) {
    ReadTrailers(*stream->cc, attempt.trailers);
    return status;
  }
  stream->ticket.emplace(std::move(attempt.ticket));
  stream->span = std::move(attempt.span);
  attempt.opened = true;
  opened = std::move(stream);
  return status;
}

Stream::Stream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Stream::Stream(Stream&& other) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept = default;
Stream::~Stream() = default;

bool Stream::opened() const { return impl_ != nullptr && impl_->call != nullptr; }

int Stream::attempts() const { return impl_ ? impl_->attempts : 0; }

bool Stream::Write(std::string_view message) {
  if (!opened() || impl_->finished || impl_->writes_done) return false;
  grpc::ByteBuffer buffer = ToByteBuffer(message);
  impl_->call->Write(buffer, &impl_->write_tag);
  return impl_->completions.Wait(&impl_->write_tag);
}

bool Stream::WritesDone() {
  if (!opened() || impl_->finished || impl_->writes_done) return false;
  impl_->call->WritesDone(&impl_->write_tag);
  impl_->writes_done = true;
  return impl_->completions.Wait(&impl_->write_tag);
}

bool Stream::Read(std::string* message) {
  if (!opened() || impl_->finished || impl_->read_done) return false;
  grpc::ByteBuffer buffer;
  impl_->call->Read(&buffer, &impl_->read_tag);
  if (!impl_->completions.Wait(&impl_->read_tag)) {
    impl_->read_done = true;
    return false;
  }
  *message = ToString(buffer);
  return true;
}

Status Stream::Finish() {
  if (impl_ == nullptr) return Status{Code::kInternal, "the stream was moved from"};
  if (impl_->finished) return impl_->status;
  return impl_->End(/*abandoned=*/false);
}

const Trailers& Stream::trailers() const {
  static const Trailers kNone;
  return impl_ ? impl_->trailers : kNone;
}

void Stream::EndLocally(Status status) {
  if (impl_ != nullptr) impl_->EndLocally(std::move(status));
}

circuit::Breaker& Client::breaker() { return impl_->breaker; }

}  // namespace outbound::rpc
