// SPDX-License-Identifier: Apache-2.0
// The unary call: the attempts of one call, each admitted by the breaker,
// sent on a fresh grpc::ClientContext, classified (the client's own rules
// first, then Settings::classify), settled in the breaker, and handed to
// retry::Loop, which decides whether and when the next one goes. Waits run
// on the Runtime's clock.
#include "outbound/rpc/client.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "address.h"
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

// Registers fn with the caller's cancel for this scope.
class CancelHook {
 public:
  CancelHook(const Context& context, std::function<void()> fn) : state_(context.cancel) {
    if (state_) id_ = state_->OnCancel(std::move(fn));
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

  // One attempt on the channel: its status, body and trailers.
  Status Attempt(const std::string& method, std::string_view request,
                 std::optional<TimePoint> deadline, const Context& context, std::string& body,
                 Trailers& trailers, const OnMessage* on_message, int& messages) {
    auto span = StartSpan(method, context);
    Status status =
        Send(method, request, deadline, context, span.get(), body, trailers, on_message, messages);
    EndSpan(span.get(), status);
    return status;
  }

  Status Send(const std::string& method, std::string_view request,
              std::optional<TimePoint> deadline, const Context& context, telemetry::Span* span,
              std::string& body, Trailers& trailers, const OnMessage* on_message, int& messages) {
    if (!stub) {
      return Status{Code::kUnavailable,
                    "the name " + addr.host + " does not exist on this network"};
    }
    auto cc = std::make_shared<grpc::ClientContext>();
    if (deadline) {
      Duration remaining = *deadline - runtime.clock->Now();
      // A span of time, which gRPC adds to its own now: the Runtime's clock
      // decides how much is left, gRPC's clock when it ends.
      cc->set_deadline(gpr_time_from_nanos(remaining.count(), GPR_TIMESPAN));
    }
    // The attempt's trace context: its own span's, or the caller's.
    const telemetry::SpanContext* trace = span ? &span->context() : &context.trace;
    if (trace->valid()) {
      cc->AddMetadata("traceparent", telemetry::FormatTraceparent(*trace));
      if (!trace->trace_state.empty()) cc->AddMetadata("tracestate", trace->trace_state);
    }
    if (!context.baggage.empty()) {
      cc->AddMetadata("baggage", telemetry::FormatBaggage(context.baggage));
    }
    grpc::Slice slice(request.data(), request.size());
    grpc::ByteBuffer request_buffer(&slice, 1);
    grpc::ByteBuffer response_buffer;
    grpc::Status status;
    if (on_message != nullptr) {
      // A server stream: read to its end on the caller's thread.
      CancelHook hook(context, [cc] { cc->TryCancel(); });
      std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
          grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
              channel.get(),
              grpc::internal::RpcMethod(method.c_str(),
                                        grpc::internal::RpcMethod::SERVER_STREAMING),
              cc.get(), request_buffer));
      try {
        while (reader->Read(&response_buffer)) {
          ++messages;
          (*on_message)(ToString(response_buffer));
        }
      } catch (...) {  // the caller's callback threw: end the stream, then pass it on
        cc->TryCancel();
        reader->Finish();
        throw;
      }
      status = reader->Finish();
    } else {
      auto signal = std::make_shared<Signal>();
      CancelHook hook(context, [cc] { cc->TryCancel(); });
      stub->UnaryCall(cc.get(), method, grpc::StubOptions(), &request_buffer, &response_buffer,
                      [&status, signal](grpc::Status s) {
                        status = std::move(s);
                        signal->Notify();
                      });
      signal->Wait();
    }
    for (const auto& [name, value] : cc->GetServerTrailingMetadata()) {
      trailers.emplace(std::string(name.data(), name.size()),
                       std::string(value.data(), value.size()));
    }
    if (status.ok() && on_message == nullptr) body = ToString(response_buffer);
    return Status{static_cast<Code>(status.error_code()), status.error_message()};
  }

  // Waits `wait` on the clock, or until the caller cancels.
  void Sleep(Duration wait, const Context& context) {
    auto signal = std::make_shared<Signal>();
    CancelHook hook(context, [signal] { signal->Notify(); });
    Timer timer = runtime.clock->ScheduleAfter(wait, [signal] { signal->Notify(); });
    signal->Wait();
  }

  // A unary call, or with on_message a server-streaming one: opening is
  // retried as a unary attempt is; once a message has arrived the stream is
  // never retried, and its end settles the breaker's ticket.
  Reply Call(std::string_view method_view, std::string_view request, const Context& context,
             const OnMessage* on_message = nullptr) {
    const std::string method(method_view);
    Clock& clock = *runtime.clock;
    TimePoint deadline = clock.Now() + settings.timeout;
    if (context.deadline && *context.deadline < deadline) deadline = *context.deadline;
    // Timeout bounds a unary call; a stream only by the caller's deadline
    // (Timeout still bounds the retries of its opening).
    std::optional<TimePoint> attempt_deadline = deadline;
    if (on_message != nullptr) attempt_deadline = context.deadline;
    retry::Loop loop = retrier.Start(deadline);
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
      circuit::Ticket ticket = std::move(*admitted);
      reply.body.clear();
      reply.trailers.clear();
      ++reply.attempts;
      int messages = 0;
      reply.status = Attempt(method, request, attempt_deadline, context, reply.body, reply.trailers,
                             on_message, messages);

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
      if (messages > 0) {  // an open stream is never sent again
        c.retry = reply.status.ok() ? retry::Outcome::kSuccess : retry::Outcome::kStop;
      }
      {
        CauseScope cause(&context.trace);
        Count(breaker_calls.get(), "outcome", circuit::ToString(c.breaker));
        ticket.Settle(c.breaker, clock.Now());
      }
      retry::Decision decision =
          loop.Done(c.retry, c.retry_after, clock.Now(), runtime.random->Uniform());
      Count(decisions.get(), "decision", retry::ToString(decision.kind));
      if (decision.kind != retry::DecisionKind::kAgain) return reply;
      Sleep(decision.wait, context);
    }
  }

  Runtime runtime;
  Settings settings;
  internal::Addr addr;
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
  auto addr = internal::ParseAddr(settings.addr);
  if (!addr) return tl::unexpected(addr.error());
  auto impl = std::make_unique<Impl>(runtime, std::move(settings), *addr);

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);  // the library's loop retries, never both
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

Reply Client::Call(std::string_view method, std::string_view request, const Context& context) {
  TimePoint start = impl_->runtime.clock->Now();
  Reply reply = impl_->Call(method, request, context);
  impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
  return reply;
}

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

Reply Client::ServerStream(std::string_view method, std::string_view request,
                           const std::function<void(std::string_view message)>& on_message,
                           const Context& context) {
  TimePoint start = impl_->runtime.clock->Now();
  Reply reply = impl_->Call(method, request, context, &on_message);
  impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
  return reply;
}

circuit::Breaker& Client::breaker() { return impl_->breaker; }

}  // namespace outbound::rpc
