#include "outbound/http/client.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include "curl_transport.h"
#include "event_loop.h"
#include "layers.h"
#include "origin.h"
#include "request_check.h"

namespace outbound::http {
namespace {

using internal::CallRequest;

// A call in flight: its state, its first request, the caller's callback,
// and its place in the client's list of live calls (guarded by Impl::mu).
struct LiveCall final : internal::CallState {
  LiveCall(TimePoint deadline, std::shared_ptr<outbound::internal::CancelState> cancel,
           Client::Callback on_done, CallRequest first)
      : CallState(deadline, std::move(cancel)),
        callback(std::move(on_done)),
        first_request(std::move(first)) {}
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
  retry::Budget budget;
  retry::Retrier retrier;
  circuit::Breaker breaker;
  // Every call's deadline; timeouts of one length, so in order.
  outbound::internal::TimeoutList deadlines;
  std::unique_ptr<internal::CallLayer> calls;  // the whole chain, below the origin check

  // Calls in flight, so the destructor can end them before the chain goes.
  std::mutex mu;
  std::condition_variable idle;
  LiveCall* live = nullptr;  // a list, newest first

  void Link(LiveCall& call) {
    std::lock_guard lock(mu);
    call.next = live;
    if (live != nullptr) live->prev = &call;
    live = &call;
  }

  // Called last on a call: once the lock is released, the destructor may
  // free this Impl.
  void Unlink(LiveCall& call) {
    std::lock_guard lock(mu);
    (call.prev != nullptr ? call.prev->next : live) = call.next;
    if (call.next != nullptr) call.next->prev = call.prev;
    idle.notify_all();
  }

  Impl(const Runtime& rt, Settings s, internal::Origin o)
      : runtime(rt),
        settings(std::move(s)),
        origin(std::move(o)),
        origin_text(origin.ToString()),
        budget(settings.retry_budget),
        retrier(retry::Policy{settings.max_attempts,
                              retry::Exponential(settings.backoff_base, settings.backoff_max)},
                budget),
        breaker(settings.breaker, settings.breaker_policy, settings.on_breaker_transition),
        deadlines(*runtime.clock) {}
};

Result<std::unique_ptr<Client>> Client::Create(const Runtime& runtime, Settings settings) {
  if (auto valid = Validate(settings); !valid) return tl::unexpected(valid.error());
  auto parsed = internal::ParseUrl(settings.base_url);
  auto impl = std::make_unique<Impl>(runtime, std::move(settings), parsed->origin);
  Impl& c = *impl;

  // The call path, bottom to top: the layers of one attempt, then of a call.
  std::unique_ptr<internal::AttemptLayer> attempt =
      internal::MakeCurlTransport(c.runtime, c.settings, c.origin, internal::EventLoop::Shared());
  attempt = internal::MakeAttemptTimeout(std::move(attempt), *c.runtime.clock,
                                         c.settings.attempt_timeout);
  attempt = internal::MakeBreakerLayer(std::move(attempt), c.breaker, c.settings.classify,
                                       *c.runtime.clock);
  attempt = internal::MakeAttemptSpan(std::move(attempt), *c.runtime.clock);
  std::unique_ptr<internal::CallLayer> call = internal::MakeRetryLoop(
      std::move(attempt), {&c.retrier, c.runtime.clock, c.runtime.random, c.settings.on_attempt});
  call = internal::MakeRedirects(std::move(call), c.origin);
  c.calls = std::move(call);
  return std::unique_ptr<Client>(new Client(std::move(impl)));
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
  for (auto& call : calls) call->Cancel();
  calls.clear();
  std::unique_lock lock(impl_->mu);
  impl_->idle.wait(lock, [&] { return impl_->live == nullptr; });
}

void Client::SendAsync(Request request, Callback done) {
  auto checked = internal::CheckRequest(impl_->origin, impl_->origin_text, request);
  if (!checked) return done(tl::unexpected(checked.error()), nullptr);
  Clock& clock = *impl_->runtime.clock;
  TimePoint deadline = clock.Now() + impl_->settings.timeout;
  if (request.context.deadline && *request.context.deadline < deadline) {
    deadline = *request.context.deadline;
  }
  auto call = std::make_shared<LiveCall>(deadline, request.context.cancel, std::move(done),
                                         std::move(*checked));
  // Shares the call's ownership: a cycle, broken when the call ends.
  call->request = std::shared_ptr<const CallRequest>(call, &call->first_request);
  // The layers hold the call until this runs: a plain pointer is enough.
  call->done = [impl = impl_.get(), live = call.get()](internal::CallOutcome&& outcome) {
    live->Disarm();
    live->request.reset();
    Callback callback = std::move(live->callback);
    callback(std::move(outcome.result), outcome.thrown);
    impl->Unlink(*live);
  };
  impl_->Link(*call);
  call->Arm(impl_->deadlines);
  impl_->calls->Send(call);
}

std::future<Result<Response>> Client::SendAsync(Request request) {
  auto promise = std::make_shared<std::promise<Result<Response>>>();
  std::future<Result<Response>> future = promise->get_future();
  SendAsync(std::move(request), [promise](Result<Response> result, std::exception_ptr thrown) {
    if (thrown) {
      promise->set_exception(thrown);
    } else {
      promise->set_value(std::move(result));
    }
  });
  return future;
}

Result<Response> Client::Send(Request request) { return SendAsync(std::move(request)).get(); }

circuit::State Client::breaker_state() const {
  return impl_->breaker.state(impl_->runtime.clock->Now());
}

const std::string& Client::origin() const { return impl_->origin_text; }

}  // namespace outbound::http
