// SPDX-License-Identifier: Apache-2.0
#include "outbound/http/client.h"

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>
#include <sstream>
#include <vector>

#include "../core/recycled.h"
#include "body_pipe_link.h"
#include "client_peer.h"
#include "client_telemetry.h"
#include "dispatcher.h"
#include "event_loop.h"
#include "front_end.h"
#include "layers.h"
#include "origin.h"
#include "outbound/internal/mutex.h"
#include "request_check.h"
#include "transport/pool.h"
#include "transport_spec.h"

namespace outbound::http {
namespace {

using internal::CallRequest;

// A call in flight: its state, its first request, the caller's callback,
// and its place in the client's list of live calls (guarded by Impl::mu).
struct LiveCall final : internal::CallState {
  // Makes the call's request in its place from the caller's `from`, which
  // CheckRequest accepted (`checked`).
  LiveCall(TimePoint deadline, std::shared_ptr<outbound::internal::CancelState> cancel,
           Client::Callback&& on_done, Request& from, internal::CheckedRequest checked)
      : CallState(deadline, std::move(cancel)),
        callback(std::move(on_done)),
        first_request(internal::TakeCallRequest(from, checked)) {}
  Client::Callback callback;
  CallRequest first_request;  // one allocation for the call and its request
  LiveCall* prev = nullptr;
  LiveCall* next = nullptr;
};

}  // namespace

struct Client::Impl {
  Runtime runtime;
  Settings settings;
  internal::Origin origin;
  std::string origin_text;
  // "payments:8443": what every error message starts with.
  std::string dependency;
  // "http:payments:8443": the client's name as a failure injection point.
  std::string fault_point;
  retry::Budget budget;
  // Each call's rules: the client's own, or its route's (Settings::routes).
  internal::Routes routes;
  internal::TransparentRetries transparent;
  std::optional<internal::HedgeBudget> hedges;  // set when settings.hedging is
  circuit::Breaker breaker;
  // After the breaker and budget its gauges read, so it goes first.
  std::unique_ptr<internal::ClientTelemetry> telemetry;
  // Every call's deadline; timeouts of one length, so in order.
  outbound::internal::TimeoutList deadlines;
  // The client's own event loop: its transfers, and the callbacks of calls
  // that end inside SendAsync. One per client, so a dependency that keeps
  // its transport busy cannot delay another client's calls.
  std::shared_ptr<internal::EventLoop> loop = std::make_shared<internal::EventLoop>();
  // The call path, below the origin check: the call layers, then each
  // attempt's. The attempt path goes first (the transport first of all).
  std::unique_ptr<internal::CallPath> calls;
  std::unique_ptr<internal::AttemptPath> attempts;
  internal::Dispatcher* dispatcher = nullptr;      // the native transport, in `attempts`
  internal::ClientTransport* transport = nullptr;  // whichever it is, in `attempts`
  internal::RateLimitLayer* rate_limit = nullptr;  // in `calls`

  // Failure injection's switches (internal::kFaultsOn, kFaultsForward):
  // read once per call, whole, so SetFaults needs no lock on the call path.
  std::atomic<std::uint8_t> fault_switches{0};
  static std::uint8_t Switches(const FaultSettings& faults) {
    return static_cast<std::uint8_t>((faults.enabled ? internal::kFaultsOn : 0) |
                                     (faults.forward_scenario ? internal::kFaultsForward : 0));
  }

  // Calls in flight, so the destructor can end them before the chain goes.
  outbound::internal::Mutex mu;
  std::condition_variable_any idle;  // told when the list empties
  LiveCall* live = nullptr;          // a list, newest first
  std::atomic<int> live_count{0};

  void Link(LiveCall& call) {
    std::lock_guard lock(mu);
    call.next = live;
    if (live != nullptr) live->prev = &call;
    live = &call;
    live_count.fetch_add(1, std::memory_order_relaxed);
  }

  // Called last on a call: once the lock is released, the destructor may
  // free this Impl.
  void Unlink(LiveCall& call) {
    std::lock_guard lock(mu);
    (call.prev != nullptr ? call.prev->next : live) = call.next;
    if (call.next != nullptr) call.next->prev = call.prev;
    live_count.fetch_sub(1, std::memory_order_relaxed);
    if (live != nullptr) return;
    if (dispatcher != nullptr) dispatcher->ClientIdle(runtime.clock->Now());
    idle.notify_all();
  }

  // Failure injection is on for every client of a Runtime that says so,
  // whatever the settings, at creation or switched (SetFaults).
  static FaultSettings WithRuntimeFaults(const Runtime& rt, FaultSettings faults) {
    faults.enabled = faults.enabled || rt.inject_faults;
    return faults;
  }
  static Settings WithRuntimeFaults(const Runtime& rt, Settings s) {
    s.faults = WithRuntimeFaults(rt, s.faults);
    return s;
  }

  Impl(const Runtime& rt, Settings s, internal::Origin o, const internal::FrontEnd& front_end)
      : runtime(rt),
        settings(WithRuntimeFaults(rt, std::move(s))),
        origin(std::move(o)),
        origin_text(origin.ToString()),
        dependency(origin.host + ":" + std::to_string(origin.port)),
        fault_point(std::string(front_end.fault_scheme) + ":" + dependency),
        budget(settings.retry_budget),
        routes(settings,
               front_end.attempt_timeout ? std::optional(settings.attempt_timeout) : std::nullopt,
               budget),
        breaker(
            settings.breaker, settings.breaker_policy,
            [this](const circuit::Transition& transition) { Transitioned(transition); },
            runtime.random),
        telemetry(front_end.telemetry
                      ? front_end.telemetry(runtime.telemetry, origin, *runtime.clock)
                      : std::make_unique<internal::ClientTelemetry>(runtime.telemetry, origin,
                                                                    *runtime.clock)),
        deadlines(*runtime.clock) {
    fault_switches.store(Switches(settings.faults), std::memory_order_relaxed);
    telemetry->Observe(breaker, budget);
    if (settings.request_logging) telemetry->LogRequests();
  }

  void Transitioned(const circuit::Transition& transition) {
    telemetry->resilience().BreakerTransition(transition, telemetry::TransitionCause::current());
    for (const auto& observer : settings.observers) observer->OnBreakerTransition(transition);
  }

  // Failure injection: the fault the call's scenario holds for this client
  // (a malformed scenario is counted and ignored), and the scenario out of
  // the baggage sent unless the settings forward it.
  void TakeFault(internal::CallState& call, telemetry::Baggage& baggage, bool forward) {
    const std::string* scenario = telemetry::FindBaggage(baggage, internal::kFaultBaggageKey);
    if (scenario == nullptr) return;
    auto fault = internal::ParseFaultScenario(*scenario, fault_point);
    if (fault) {
      call.fault = *fault;
    } else {
      telemetry->FaultScenarioIgnored();
    }
    if (!forward) {
      std::erase_if(baggage, [](const telemetry::BaggageEntry& entry) {
        return entry.key == internal::kFaultBaggageKey;
      });
    }
  }

  // Starts a call (Client::SendAsync); `idempotent` as its front end says
  // (CallRequest::idempotent). Takes what it keeps from `request` and `done`.
  void Send(Request&& request, Callback&& done, std::optional<bool> idempotent);

  // Each attempt's record, for the observers; null when there are none.
  std::function<void(const AttemptRecord&)> AttemptObservers() {
    if (settings.observers.empty()) return nullptr;
    return [this](const AttemptRecord& record) {
      for (const auto& observer : settings.observers) observer->OnAttempt(record);
    };
  }
};

Result<std::unique_ptr<Client>> Client::Create(const Runtime& runtime, Settings settings) {
  return internal::CreateClient(runtime, std::move(settings), internal::FrontEnd{});
}

namespace internal {

Result<std::unique_ptr<Client>> CreateClient(const Runtime& runtime, Settings settings,
                                             const FrontEnd& front_end) {
  using Impl = Client::Impl;
  if (auto valid = Validate(settings); !valid) return tl::unexpected(valid.error());
  auto parsed = internal::ParseUrl(settings.base_url);
  auto impl = std::make_unique<Impl>(runtime, std::move(settings), parsed->origin, front_end);
  Impl& c = *impl;

  // The library's own transport, the client's dispatcher over its
  // connection pool, unless the Runtime gives another (a test's
  // FakeTransport).
  std::unique_ptr<internal::ClientTransport> transport;
  internal::TransportSpec spec{c.runtime, c.settings, c.origin, front_end.http2_only,
                               front_end.body_wanted};
  if (c.runtime.transport != nullptr) {
    transport = c.runtime.transport->CarryFor(spec);
  } else {
    auto pool = internal::NativePoolFor(spec, c.loop);
    if (!pool) return tl::unexpected(pool.error());
    auto dispatcher = std::make_unique<internal::Dispatcher>(*c.runtime.clock, c.loop, *pool);
    c.dispatcher = dispatcher.get();
    transport = std::move(dispatcher);
  }
  c.transport = transport.get();
  Clock& clock = *c.runtime.clock;
  const Settings& s = c.settings;
  auto misused = [&telemetry = *c.telemetry](std::string_view what) {
    telemetry.LayerMisused(what);
  };
  const ClientTelemetry& telemetry = *c.telemetry;

  // The call path, top to bottom: the order is these two lists. A layer
  // that is off is not in its list, and costs nothing; except the rate
  // limit and fault injection, which can be switched on while calls go
  // (SetRateLimit, SetFaults) and so are always there, passing a call on
  // after one relaxed load while off.
  internal::AttemptSlots slots;
  std::vector<std::unique_ptr<internal::AttemptLayer>> attempt_layers;
  attempt_layers.push_back(internal::MakeAttemptSpan(slots, telemetry));
  attempt_layers.push_back(internal::MakeBreakerLayer(slots, c.breaker, clock, telemetry));
  if (s.balancing) attempt_layers.push_back(internal::MakeOutlierDetection(telemetry));
  attempt_layers.push_back(internal::MakeClassifyLayer());
  if (!s.attempt_middleware.empty()) {
    attempt_layers.push_back(internal::MakeAttemptMiddleware(c.origin, s.attempt_middleware));
  }
  if (std::ranges::any_of(c.routes.all(),
                          [](const auto& r) { return r.attempt_timeout.has_value(); })) {
    attempt_layers.push_back(internal::MakeAttemptTimeout(slots, clock, c.routes));
  }
  attempt_layers.push_back(internal::MakeFaultInjection(
      clock, *c.runtime.random, front_end.injected_answer, c.fault_switches));
  if (front_end.attempt_layers) front_end.attempt_layers(slots, clock, attempt_layers);
  attempt_layers.push_back(internal::MakeTransportLayer(std::move(transport)));
  c.attempts =
      std::make_unique<internal::AttemptPath>(std::move(slots), std::move(attempt_layers), misused);

  std::vector<std::unique_ptr<internal::CallLayer>> call_layers;
  if (!s.call_middleware.empty()) {
    call_layers.push_back(internal::MakeCallMiddleware(c.origin, s.call_middleware));
  }
  if (s.bulkhead) call_layers.push_back(internal::MakeBulkhead(clock, *s.bulkhead));
  auto rate_limit = internal::MakeRateLimit(clock, s.rate_limit);
  c.rate_limit = rate_limit.get();
  call_layers.push_back(std::move(rate_limit));
  if (s.adaptive_concurrency) {
    call_layers.push_back(
        internal::MakeAdaptiveConcurrency(clock, *s.adaptive_concurrency, telemetry));
  }
  if (front_end.redirects) call_layers.push_back(internal::MakeRedirects(c.origin));
  if (s.hedging) c.hedges.emplace(*s.hedging);
  call_layers.push_back(internal::MakeRetryLoop(
      *c.attempts, {c.runtime.clock, c.runtime.random, c.AttemptObservers(), &telemetry,
                    &c.transparent, c.hedges ? &*c.hedges : nullptr}));
  c.calls = std::make_unique<internal::CallPath>(std::move(call_layers), misused);

  if (c.dispatcher != nullptr) c.dispatcher->CountCallsWith(c.live_count);
  return ClientPeer::Make(std::move(impl));
}

std::unique_ptr<Client> ClientPeer::Make(std::unique_ptr<Client::Impl> impl) {
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

}  // namespace internal

std::unique_ptr<Client> Client::CreateOrThrow(const Runtime& runtime, Settings settings) {
  return OrThrow(Create(runtime, std::move(settings)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() {
  std::vector<std::shared_ptr<internal::CallState>> calls;
  {
    std::lock_guard lock(impl_->mu);
    for (LiveCall* call = impl_->live; call != nullptr; call = call->next) {
      // Null for a call already on its way out.
      if (auto held = call->weak_from_this().lock()) calls.push_back(std::move(held));
    }
  }
  for (auto& call : calls) call->ClientDestroyed();
  calls.clear();
  std::unique_lock lock(impl_->mu);
  impl_->idle.wait(lock, [&] { return impl_->live == nullptr; });
}

namespace {

// The client whose SendAsync runs on this thread now, if any: a call that
// ends before SendAsync returns has its callback posted to the client's
// loop instead of run on the caller's stack, where the caller may hold a
// lock, or be the callback of the call before (a closed loop would recurse).
thread_local const Client::Impl* t_sending = nullptr;

class SendingScope {
 public:
  explicit SendingScope(const Client::Impl* impl) : previous_(t_sending) { t_sending = impl; }
  ~SendingScope() { t_sending = previous_; }
  SendingScope(const SendingScope&) = delete;
  SendingScope& operator=(const SendingScope&) = delete;

 private:
  const Client::Impl* previous_;
};

// `error` with the dependency's name in front, so a service with several
// clients can tell in one log line which dependency failed.
Error NamedError(const std::string& dependency, const Error& error) {
  Error named(error.kind(), dependency + ": " + error.message());
  named.set_attempts(error.attempts());
  if (error.retry_after()) named.set_retry_after(*error.retry_after());
  if (error.stream_reset_code()) named.set_stream_reset_code(*error.stream_reset_code());
  return named;
}

}  // namespace

void Client::SendAsync(Request request, Callback done) {
  impl_->Send(std::move(request), std::move(done), std::nullopt);
}

void Client::Impl::Send(Request&& request, Callback&& done, std::optional<bool> idempotent) {
  Impl& impl = *this;
  SendingScope sending(&impl);
  // A pipe carries one call's body; refused, this call ends its writer's
  // wait at once.
  BodyPipe* pipe = request.body_source.pipe.get();  // held by the request, then the call
  bool claimed = pipe != nullptr && internal::PipeLink::Claim(*pipe);
  auto refuse = [&](const Error& error) {
    if (claimed) internal::PipeLink::Finish(*pipe);
    impl.loop->Post([done = std::move(done), error = NamedError(impl.dependency, error)] {
      done(tl::unexpected(error), nullptr);
    });
  };
  if (pipe != nullptr && !claimed) {
    return refuse(Error(ErrorKind::kInvalidRequest,
                        "the request's BodyPipe carries another call's body already"));
  }
  // The context's fields go after the request's own, and are checked as
  // those are.
  for (const auto& [name, value] : request.context.metadata) {
    request.headers.emplace_back(name, value);
  }
  auto checked = internal::CheckRequest(impl.origin, impl.origin_text, request, impl.settings.gzip);
  if (!checked) return refuse(checked.error());
  Clock& clock = *impl.runtime.clock;
  TimePoint now = clock.Now();
  const internal::CallPolicy& policy = impl.routes.For(request.url);
  // The shorter of the call's Timeout and the request's own, compared as
  // durations so a huge request timeout cannot overflow the time point.
  Duration timeout = policy.timeout;
  if (request.timeout && *request.timeout < timeout) timeout = *request.timeout;
  TimePoint deadline = AddSaturated(now, timeout);
  if (request.context.deadline && *request.context.deadline < deadline) {
    deadline = *request.context.deadline;
  }
  // Over before it began: nothing is sent.
  if (request.context.cancel && request.context.cancel->cancelled()) {
    return refuse(Error(ErrorKind::kCancelled, "the caller cancelled the call: nothing was sent"));
  }
  if (deadline <= now) {
    return refuse(Error(ErrorKind::kDeadline, "the call's deadline had passed: nothing was sent"));
  }
  auto call = outbound::internal::MakeRecycled<LiveCall>(
      deadline, std::move(request.context.cancel), std::move(done), request, *checked);
  call->first_request.idempotent = idempotent;
  call->policy = &policy;
  call->parent = std::move(request.context.trace);
  call->body_sink = std::move(request.body_sink);
  call->body_head = std::move(request.body_head);
  call->receive_window = std::move(request.receive_window);
  call->body_timeout = request.body_timeout;
  call->context_deadline = request.context.deadline;
  // One load: the call sees the switches whole, as they are now.
  if (std::uint8_t faults = impl.fault_switches.load(std::memory_order_relaxed);
      (faults & internal::kFaultsOn) != 0) {
    impl.TakeFault(*call, request.context.baggage, (faults & internal::kFaultsForward) != 0);
  }
  if (!request.context.baggage.empty()) {
    call->baggage = telemetry::FormatBaggage(request.context.baggage);
  }
  // Shares the call's ownership: a cycle, broken when the call ends.
  call->request = std::shared_ptr<const CallRequest>(call, &call->first_request);
  // The layers hold the call until this runs: a plain pointer is enough.
  call->done = [impl = this, live = call.get()](internal::CallOutcome&& outcome) {
    live->Disarm();
    live->request.reset();
    // A pipe's writer hears the end even of a call that never reached the
    // transport (refused, rejected, cancelled while queued).
    if (const auto& body_pipe = live->first_request.body_source.pipe) {
      internal::PipeLink::Finish(*body_pipe);
    }
    if (!outcome.result) {
      outcome.result = tl::unexpected(NamedError(impl->dependency, outcome.result.error()));
    } else {
      outcome.result->attempts = live->attempts_sent.load();
      outcome.result->redirects = live->redirects;
    }
    auto finish = [impl, live](internal::CallOutcome& ended) {
      Callback callback = std::move(live->callback);
      callback(std::move(ended.result), ended.thrown);
      impl->Unlink(*live);
    };
    if (t_sending == impl || internal::CallState::Stopping() || !impl->loop->InLoop()) {
      // Ended inside SendAsync (a rejection), by a stop (a cancel, even one
      // from the caller's own callback on the loop; a deadline) or on a
      // thread that is not the loop's (a ManualClock advanced): the caller
      // hears of it from the loop's queue, never on the stack of code that
      // may hold its own locks. The call stays alive until then.
      impl->loop->Post([held = live->shared_from_this(), finish,
                        outcome = std::move(outcome)]() mutable { finish(outcome); });
    } else {
      finish(outcome);  // on the loop already: the outcome is not moved again
    }
  };
  impl.Link(*call);
  call->Arm(impl.deadlines);
  call->Begin(*impl.calls);
}

namespace internal {

std::string ClientPeer::CallLayers(const Client& client) { return client.impl_->calls->Describe(); }

void ClientPeer::SendAsync(Client& client, Request request, bool idempotent,
                           Client::Callback done) {
  client.impl_->Send(std::move(request), std::move(done), idempotent);
}

void ClientPeer::Post(Client& client, std::function<void()> fn) {
  client.impl_->loop->Post(std::move(fn));
}

circuit::Breaker& ClientPeer::breaker(Client& client) { return client.impl_->breaker; }

std::string ClientPeer::AttemptLayers(const Client& client) {
  return client.impl_->attempts->Describe();
}

}  // namespace internal

circuit::State Client::breaker_state() const {
  return impl_->breaker.state(impl_->runtime.clock->Now());
}

void Client::OverrideBreaker(circuit::Override override) {
  TimePoint now = impl_->runtime.clock->Now();
  circuit::Hold before = impl_->breaker.SetOverride(override, now);
  impl_->telemetry->resilience().BreakerOverridden(override, before, now);
}

void Client::SetFaults(FaultSettings faults) {
  faults = Impl::WithRuntimeFaults(impl_->runtime, faults);
  impl_->fault_switches.store(Impl::Switches(faults), std::memory_order_relaxed);
  impl_->telemetry->resilience().SettingSwitched("faults",
                                                 !faults.enabled ? "off"
                                                 : faults.forward_scenario
                                                     ? "on, forwarding the scenario"
                                                     : "on",
                                                 impl_->runtime.clock->Now());
}

FaultSettings Client::faults() const {
  std::uint8_t switches = impl_->fault_switches.load(std::memory_order_relaxed);
  return FaultSettings{.enabled = (switches & internal::kFaultsOn) != 0,
                       .forward_scenario = (switches & internal::kFaultsForward) != 0};
}

Result<void> Client::SetRateLimit(std::optional<RateLimit> limit) {
  if (auto valid = CheckRateLimit(limit); !valid) {
    return Fail(ErrorKind::kInvalidSettings,
                impl_->dependency + ": rate_limit: " + valid.error().message());
  }
  impl_->rate_limit->Set(limit);
  std::string value = "off";
  if (limit) {
    std::ostringstream text;
    text << limit->per_second << "/s," << limit->burst;
    value = text.str();
  }
  impl_->telemetry->resilience().SettingSwitched("rate_limit", value, impl_->runtime.clock->Now());
  return {};
}

std::optional<RateLimit> Client::rate_limit() const { return impl_->rate_limit->limit(); }

const std::string& Client::origin() const { return impl_->origin_text; }

std::future<Result<void>> Client::Warm(const Context& context) {
  TimePoint deadline = AddSaturated(impl_->runtime.clock->Now(), impl_->settings.timeout);
  if (context.deadline) deadline = std::min(deadline, *context.deadline);
  auto ready = std::make_shared<std::promise<Result<void>>>();
  std::future<Result<void>> warmed = ready->get_future();
  impl_->transport->Warm(deadline, [ready, &dependency = impl_->dependency](Result<void> result) {
    if (!result) {
      result = Fail(result.error().kind(), dependency + ": " + result.error().message());
    }
    ready->set_value(std::move(result));
  });
  return warmed;
}

bool Client::Connected() const { return impl_->transport->Connected(); }

bool Client::WaitUntilIdle(std::chrono::milliseconds real_limit) const {
  std::unique_lock lock(impl_->mu);
  return impl_->idle.wait_for(lock, real_limit, [&] { return impl_->live == nullptr; });
}

}  // namespace outbound::http
