// SPDX-License-Identifier: Apache-2.0
// The attempts of one call, each admitted by the breaker, sent on a fresh
// grpc::ClientContext, classified (the client's own rules first, then
// Settings::classify), settled in the breaker, and handed to retry::Loop,
// which decides whether and when the next one goes. Waits run on the
// Runtime's clock. One loop (Client::Impl::Run, client_impl.h) serves a
// unary call, the caller's own attempt (a generated stub's method), a
// server stream, and a stream's opening (stream.cc); an open Stream holds
// its ticket until it ends.
#include "outbound/rpc/client.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "client_impl.h"
#include "outbound/internal/fault_scenario.h"
#include "outbound/telemetry/metrics.h"
#include "outbound/telemetry/propagation.h"
#include "outbound/telemetry/trace.h"
#include "wire/status.h"

namespace outbound::rpc {

using internal::AttemptContext;
using internal::AttemptState;
using internal::CancelHook;
using internal::CodeName;
using internal::kClientDestroyed;
using internal::kScope;
using internal::OnMessage;
using internal::OpeningBound;
using internal::ReadTrailers;
using internal::Signal;
using internal::SplitMethod;
using internal::ToByteBuffer;
using internal::ToString;

namespace {

std::string Bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

}  // namespace

Client::Impl::Impl(const Runtime& rt, Settings s, internal::Addr a)
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
  instruments.Observe(breaker, budget, *runtime.clock);
  telemetry::MeterProvider* meters = runtime.telemetry.meters;
  if (meters == nullptr) return;
  call_duration =
      meters->CreateHistogram({kScope, "rpc.client.call.duration", "s",
                               "The duration of a unary call, its retries and waits included"},
                              telemetry::kDurationBuckets);
}

void Client::Impl::OnTransition(const circuit::Transition& transition) {
  instruments.BreakerTransition(transition, telemetry::TransitionCause::current());
}

void Client::Impl::RecordCall(std::string_view method, const Status& status, Duration took) {
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

std::unique_ptr<telemetry::Span> Client::Impl::StartSpan(std::string_view method,
                                                         const Context& context) const {
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

void Client::Impl::EndSpan(telemetry::Span* span, const Status& status) const {
  if (span == nullptr) return;
  span->SetAttribute({"rpc.grpc.status_code", static_cast<std::int64_t>(status.code)});
  if (!status.ok()) {
    span->SetAttribute({"error.type", CodeName(status.code)});
    span->SetStatus(telemetry::StatusCode::kError, status.message);
  }
  span->End(runtime.clock->Now());
}

std::shared_ptr<AttemptContext> Client::Impl::NewContext(const AttemptState& attempt,
                                                         const Context& context) {
  std::optional<Duration> remaining;
  if (attempt.deadline) remaining = *attempt.deadline - runtime.clock->Now();
  auto attempt_context = AttemptContext::Make(deadlines, grpc_clock, remaining);
  grpc::ClientContext* cc = &attempt_context->grpc();
  // The attempt's trace context: its own span's, or the caller's.
  const telemetry::SpanContext* trace = attempt.span ? &attempt.span->context() : &context.trace;
  if (trace->valid()) {
    cc->AddMetadata("traceparent", telemetry::FormatTraceparent(*trace));
    if (!trace->trace_state.empty()) cc->AddMetadata("tracestate", trace->trace_state);
  }
  if (!context.baggage.empty()) {
    cc->AddMetadata("baggage", telemetry::FormatBaggage(SentBaggage(context.baggage)));
  }
  if (attempt.blocking != nullptr) attempt.blocking->Sending(attempt_context);
  return attempt_context;
}

telemetry::Baggage Client::Impl::SentBaggage(const telemetry::Baggage& baggage) const {
  // With faults off the scenario is not this client's to read, nor strip.
  if (!settings.faults.enabled || settings.faults.forward_scenario ||
      telemetry::FindBaggage(baggage, outbound::internal::kFaultBaggageKey) == nullptr) {
    return baggage;
  }
  telemetry::Baggage sent = baggage;
  std::erase_if(sent, [](const telemetry::BaggageEntry& entry) {
    return entry.key == outbound::internal::kFaultBaggageKey;
  });
  return sent;
}

std::optional<outbound::internal::InjectedFault> Client::Impl::FaultFor(
    const Context& context) const {
  if (!settings.faults.enabled) return std::nullopt;
  const std::string* scenario =
      telemetry::FindBaggage(context.baggage, outbound::internal::kFaultBaggageKey);
  if (scenario == nullptr) return std::nullopt;
  auto fault = outbound::internal::ParseFaultScenario(*scenario, fault_point);
  return fault ? *fault : std::nullopt;
}

Status Client::Impl::NoRoute() const {
  return Status{Code::kUnavailable, "the name " + addr.host + " does not exist on this network"};
}

Status Client::Impl::SendUnary(const std::string& method, std::string_view request,
                               const Context& context, AttemptState& attempt) {
  if (!stub) return NoRoute();
  auto cc = NewContext(attempt, context);
  grpc::ByteBuffer request_buffer = ToByteBuffer(request);
  grpc::ByteBuffer response_buffer;
  grpc::Status status;
  auto signal = std::make_shared<Signal>();
  {
    CancelHook hook(context, [cc] { cc->TryCancel(); });
    stub->UnaryCall(&cc->grpc(), method, grpc::StubOptions(), &request_buffer, &response_buffer,
                    [&status, signal](grpc::Status s) {
                      status = std::move(s);
                      signal->Notify();
                    });
    signal->Wait();
  }
  ReadTrailers(cc->grpc(), attempt.trailers);
  if (status.ok()) attempt.body = ToString(response_buffer);
  return cc->Ended(status);
}

Status Client::Impl::SendServerStream(const std::string& method, std::string_view request,
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
          &cc->grpc(), request_buffer));
  if (!bound.Opened()) {
    reader->Finish();
    ReadTrailers(cc->grpc(), attempt.trailers);
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
  ReadTrailers(cc->grpc(), attempt.trailers);
  return cc->Ended(status);
}

Status Client::Impl::SendOwn(const Client::Attempt& own, const Context& context,
                             AttemptState& attempt) {
  if (!channel) return NoRoute();
  auto cc = NewContext(attempt, context);
  CancelHook hook(context, [cc] { cc->TryCancel(); });
  Status status = own(&cc->grpc());
  ReadTrailers(cc->grpc(), attempt.trailers);
  return cc->Ended(std::move(status));
}

void Client::Impl::Sleep(Duration wait, const Context& context, internal::BlockingCall* blocking) {
  auto signal = std::make_shared<Signal>();
  CancelHook hook(context, [signal] { signal->Notify(); });
  if (blocking != nullptr) blocking->Waiting(signal);
  Timer timer = runtime.clock->ScheduleAfter(wait, [signal] { signal->Notify(); });
  signal->Wait();
  if (blocking != nullptr) blocking->Woken();
}

void Client::Impl::CountSlow(internal::SlowRule& slow) {
  std::lock_guard lock(slow.mu);
  if (slow.ticket == nullptr || slow.ticket->settled()) return;
  slow.counted = true;
  try {
    Settle(*slow.ticket, circuit::Outcome::kFailure, slow.cause);
  } catch (...) {  // settled all the same; the caller hears of it
    slow.thrown = std::current_exception();
  }
}

void Client::Impl::Settle(circuit::Ticket& ticket, circuit::Outcome outcome,
                          const telemetry::SpanContext& cause) {
  telemetry::TransitionCause scope(&cause);
  instruments.BreakerCounted(circuit::ToString(outcome));
  ticket.Settle(outcome, runtime.clock->Now());
}

Client::Impl::CallState Client::Impl::StartCall(const Context& context, bool stream,
                                                internal::BlockingCall* blocking) {
  TimePoint deadline = runtime.clock->Now() + settings.timeout;
  if (context.deadline && *context.deadline < deadline) deadline = *context.deadline;
  std::optional<TimePoint> attempt_deadline = deadline;
  if (stream) attempt_deadline = context.deadline;
  return CallState{.deadline = deadline,
                   .attempt_deadline = attempt_deadline,
                   .loop = retrier.Start(deadline),
                   .fault = FaultFor(context),
                   .reply = {},
                   .blocking = blocking};
}

bool Client::Impl::NextAttempt(CallState& call, std::string_view method, const Context& context,
                               bool stream, std::optional<AttemptState>& attempt) {
  Clock& clock = *runtime.clock;
  Reply& reply = call.reply;
  // Nothing is sent once the caller gave up, the client is going or the
  // deadline passed; the call ends with what the last attempt got, if any.
  if (internal::Cancelled(context)) {
    if (reply.attempts == 0) reply.status = {Code::kCancelled, "the caller cancelled the call"};
    return false;
  }
  if (call.blocking != nullptr && call.blocking->abandoned()) {
    if (reply.attempts == 0) reply.status = {Code::kCancelled, std::string(kClientDestroyed)};
    return false;
  }
  if (clock.Now() >= call.deadline) {
    if (reply.attempts == 0) reply.status = {Code::kDeadlineExceeded, "the call's deadline passed"};
    return false;
  }
  auto admitted = [&] {
    telemetry::TransitionCause cause(&context.trace);
    return breaker.Allow(clock.Now());
  }();
  if (!admitted) {
    instruments.BreakerCounted("rejected");
    instruments.RetryDecided(retry::DecisionKind::kStopped);
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
    return false;
  }
  ++reply.attempts;
  attempt.emplace(
      AttemptState{call.attempt_deadline, StartSpan(method, context), std::move(*admitted)});
  if (stream) attempt->open_by = call.deadline;
  attempt->blocking = call.blocking;
  if (!stream && settings.breaker.slow_call > Duration::zero()) {
    auto slow = std::make_shared<internal::SlowRule>(&attempt->ticket, context.trace);
    attempt->slow_timer =
        clock.ScheduleAfter(settings.breaker.slow_call, [this, slow] { CountSlow(*slow); });
    attempt->slow = std::move(slow);
  }
  return true;
}

std::optional<Duration> Client::Impl::Conclude(CallState& call, std::string_view method,
                                               const Context& context, AttemptState& attempt,
                                               Status status) {
  Clock& clock = *runtime.clock;
  Reply& reply = call.reply;
  if (internal::SlowRule* slow = attempt.slow.get()) {
    slow->Disarm();
    attempt.slow_timer.Cancel();
    if (slow->thrown) std::rethrow_exception(slow->thrown);  // the user's policy
  }
  reply.status = std::move(status);
  // An answered call proves the channel was READY, whether or not anyone
  // asked Connected() while it was.
  if (reply.status.ok()) connected.store(true, std::memory_order_release);
  reply.body = std::move(attempt.body);
  reply.trailers = std::move(attempt.trailers);
  if (attempt.opened) {
    // A stream that opened is a Success for retry, without asking
    // classify; its end settles the ticket and ends the span.
    retry::Decision decision = call.loop.Done(retry::Outcome::kSuccess, Duration::zero(),
                                              clock.Now(), runtime.random->Uniform());
    instruments.RetryDecided(decision.kind);
    return std::nullopt;
  }
  EndSpan(attempt.span.get(), reply.status);

  Classification c;
  if (Stopped(call, context)) {
    c = {retry::Outcome::kStop, Duration::zero(), circuit::Outcome::kIgnored};
  } else if (!reply.status.ok() && clock.Now() >= call.deadline) {
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
  if (!attempt.slow || !attempt.slow->counted) Settle(attempt.ticket, c.breaker, context.trace);
  retry::Decision decision =
      call.loop.Done(c.retry, c.retry_after, clock.Now(), runtime.random->Uniform());
  instruments.RetryDecided(decision.kind);
  if (decision.kind != retry::DecisionKind::kAgain) return std::nullopt;
  return decision.wait;
}

std::optional<Status> Client::Impl::InjectedAnswer(const outbound::internal::InjectedFault& fault,
                                                   AttemptState& attempt) const {
  using Kind = outbound::internal::InjectedFault::Kind;
  static constexpr std::string_view kNames[] = {"abort", "delay", "status"};
  if (attempt.span) {
    attempt.span->SetAttribute({"outbound.fault.injected", kNames[static_cast<int>(fault.kind)]});
  }
  switch (fault.kind) {
    case Kind::kAbort:
      return Status{Code::kUnavailable, "injected fault: the attempt was aborted"};
    case Kind::kStatus:
      if (fault.retry_after) {
        attempt.trailers.emplace("grpc-retry-pushback-ms",
                                 std::to_string(std::uint64_t{*fault.retry_after} * 1000));
      }
      return Status{internal::CodeForHttpStatus(fault.status),
                    "injected fault: HTTP status " + std::to_string(fault.status)};
    case Kind::kDelay:
      break;
  }
  return std::nullopt;
}

TimePoint Client::Impl::DelayedUntil(const outbound::internal::InjectedFault& fault,
                                     const AttemptState& attempt) const {
  TimePoint until = runtime.clock->Now() + fault.delay;
  if (attempt.deadline && *attempt.deadline < until) until = *attempt.deadline;
  return until;
}

std::optional<Status> Client::Impl::AfterDelay(const AttemptState& attempt,
                                               const Context& context) const {
  if (internal::Cancelled(context))
    return Status{Code::kCancelled, "the caller cancelled the call"};
  if (attempt.blocking != nullptr && attempt.blocking->abandoned()) {
    return Status{Code::kCancelled, std::string(kClientDestroyed)};
  }
  if (attempt.deadline && runtime.clock->Now() >= *attempt.deadline) {
    return Status{Code::kDeadlineExceeded, "the deadline passed during an injected delay"};
  }
  return std::nullopt;
}

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
  // Each attempt's deadline is still sent, and kept by the library
  // (AttemptContext): gRPC's per-call timer is the largest part of its cost.
  args.SetInt(GRPC_ARG_ENABLE_DEADLINE_CHECKS, 0);
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

Client::~Client() {
  impl_->EndBlockingCalls();
  impl_->EndAsyncCalls();
}

namespace internal {

BlockingCall::BlockingCall(Client::Impl& client) : client_(client) {
  std::lock_guard lock(client.blocking_mu);
  if (client.ending) abandoned_.store(true, std::memory_order_release);
  listed_after = client.blocking_calls;
  if (listed_after != nullptr) listed_after->listed_before = this;
  client.blocking_calls = this;
}

BlockingCall::~BlockingCall() {
  {
    // What an attempt or a wait that threw left here goes while the client
    // is there.
    std::lock_guard lock(mu_);
    attempt_.reset();
    wait_.reset();
  }
  std::lock_guard lock(client_.blocking_mu);
  if (listed_before != nullptr) listed_before->listed_after = listed_after;
  if (listed_after != nullptr) listed_after->listed_before = listed_before;
  if (client_.blocking_calls == this) client_.blocking_calls = listed_after;
  // Under the lock: once it is released, ~Client may free the client.
  if (client_.ending && client_.blocking_calls == nullptr) client_.blocking_left.notify_all();
}

void BlockingCall::Sending(const std::shared_ptr<AttemptContext>& attempt) {
  {
    std::lock_guard lock(mu_);
    attempt_ = attempt;
    if (!abandoned()) return;
  }
  attempt->TryCancel();  // gRPC cancels the RPC once it starts on the context
}

Status BlockingCall::Sent(Status status) {
  std::shared_ptr<AttemptContext> sent;
  {
    std::lock_guard lock(mu_);
    sent = std::move(attempt_);
  }
  if (status.code == Code::kCancelled && abandoned()) {
    status.message = std::string(kClientDestroyed);
  }
  return status;
}

void BlockingCall::Waiting(const std::shared_ptr<Signal>& wait) {
  {
    std::lock_guard lock(mu_);
    wait_ = wait;
    if (!abandoned()) return;
  }
  wait->Notify();
}

void BlockingCall::Woken() {
  std::lock_guard lock(mu_);
  wait_.reset();
}

void BlockingCall::Abandon() {
  std::shared_ptr<AttemptContext> attempt;
  std::shared_ptr<Signal> wait;
  {
    std::lock_guard lock(mu_);
    abandoned_.store(true, std::memory_order_release);
    attempt = attempt_;
    wait = wait_;
  }
  if (attempt) attempt->TryCancel();
  if (wait) wait->Notify();
}

}  // namespace internal

void Client::Impl::EndBlockingCalls() {
  std::unique_lock lock(blocking_mu);
  ending = true;
  // A call stays listed, and on its thread's stack, until it has left.
  for (internal::BlockingCall* call = blocking_calls; call != nullptr; call = call->listed_after) {
    call->Abandon();
  }
  blocking_left.wait(lock, [this] { return blocking_calls == nullptr; });
}

Reply Client::Call(std::string_view method_view, std::string_view request, const Context& context) {
  internal::BlockingCall blocking(*impl_);
  const std::string method(method_view);
  TimePoint start = impl_->runtime.clock->Now();
  Reply reply = impl_->Run(method, context, /*stream=*/false, blocking, [&](AttemptState& attempt) {
    return impl_->SendUnary(method, request, context, attempt);
  });
  impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
  return reply;
}

Reply Client::Invoke(std::string_view method, const Attempt& own, const Context& context) {
  internal::BlockingCall blocking(*impl_);
  TimePoint start = impl_->runtime.clock->Now();
  Reply reply = impl_->Run(method, context, /*stream=*/false, blocking, [&](AttemptState& attempt) {
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
  internal::BlockingCall blocking(*impl_);
  const std::string method(method_view);
  TimePoint start = impl_->runtime.clock->Now();
  Reply reply = impl_->Run(method, context, /*stream=*/true, blocking, [&](AttemptState& attempt) {
    return impl_->SendServerStream(method, request, context, on_message, attempt);
  });
  impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
  return reply;
}

circuit::Breaker& Client::breaker() { return impl_->breaker; }

}  // namespace outbound::rpc
