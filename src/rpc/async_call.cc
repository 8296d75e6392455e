// SPDX-License-Identifier: Apache-2.0
// A unary call that does not block (Client::CallAsync, InvokeAsync): the
// loop of Client::Impl::Run taken one step at a time. Each attempt is
// admitted by the breaker and sent on a fresh grpc::ClientContext from
// whatever thread the call is on; its completion, on one of gRPC's threads,
// classifies it and either ends the call or arms the wait before the next
// attempt on the Runtime's clock. No thread waits for the call.
//
// Where code runs: the first attempt is sent from the caller's thread, a
// retry from the clock's (a ManualClock's: the thread that advances it),
// and `done` always on one of gRPC's: from the last attempt's completion,
// or posted to gRPC's executor when the call ends anywhere else (rejected
// by the breaker, cancelled before an attempt, its deadline passed during
// a wait), so it never runs on the stack that started, cancelled or
// advanced the call.
#include <grpc/support/time.h>
#include <grpcpp/alarm.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "call_parts.h"
#include "client_impl.h"
#include "outbound/rpc/client.h"

namespace outbound::rpc {
namespace internal {
namespace {

// Runs fn soon on one of gRPC's executor threads. The alarm is deleted from
// its own callback (grpc++ keeps the callback until it returns), and before
// fn runs: an Alarm holds gRPC's library open, and fn may let the client go,
// whose owner may then close the library. Closed last on one of gRPC's own
// threads, it would be shut down on a thread of its own, racing the next
// grpc_init.
void Post(std::function<void()> fn) {
  auto* alarm = new grpc::Alarm;
  alarm->Set(gpr_now(GPR_CLOCK_MONOTONIC), [alarm, fn = std::move(fn)](bool /*fired*/) {
    delete alarm;
    fn();
  });
}

// The call whose Step runs on this thread: its end is posted, not run here.
thread_local const void* stepping = nullptr;

class SteppingScope {
 public:
  explicit SteppingScope(const void* call) : saved_(stepping) { stepping = call; }
  ~SteppingScope() { stepping = saved_; }
  SteppingScope(const SteppingScope&) = delete;
  SteppingScope& operator=(const SteppingScope&) = delete;

 private:
  const void* saved_;
};

}  // namespace

class AsyncCall : public std::enable_shared_from_this<AsyncCall> {
 public:
  AsyncCall(Client::Impl& client, std::string_view method, const Context& context,
            std::unique_ptr<AsyncHooks> hooks)
      : client_(client),
        method_(method),
        context_(context),
        hooks_(std::move(hooks)),
        start_(client.runtime.clock->Now()) {}

  // Starts the call on the caller's thread; returns once its first attempt
  // is sent (or the call has ended).
  void Start() {
    call_.emplace(client_.StartCall(context_, /*stream=*/false, /*blocking=*/nullptr));
    Step();
  }

  // The client is going away: ends the call soon, its attempt cancelled or
  // its wait cut short. From ~Client, which then waits for `done`.
  void Abandon() {
    std::shared_ptr<AttemptContext> cc;
    bool waiting = false;
    {
      std::lock_guard lock(mu_);
      abandoned_ = true;
      cc = cc_;
      waiting = wait_.pending();  // a wait armed after this sees abandoned_
    }
    if (cc) cc->TryCancel();
    if (waiting) Post([self = shared_from_this()] { self->WakeEarly(); });
  }

  // The attempt has its status (on one of gRPC's threads, or posted):
  // classified, settled, and the call ended or its next attempt's wait
  // armed.
  void AttemptDone(Status status) {
    std::shared_ptr<AsyncCall> self = std::move(sending_);  // this lives until we return
    std::shared_ptr<AttemptContext> cc;
    {
      std::lock_guard lock(mu_);
      hook_.reset();
      cc = std::move(cc_);
    }
    if (cc) {
      ReadTrailers(cc->grpc(), attempt_->trailers);
      status = cc->Ended(std::move(status));
    }
    // Gone before the call can end: a ClientContext holds the channel, and
    // the channel must not be released last here, on one of gRPC's
    // callback threads: its destructor shuts down the queue that thread
    // serves (grpc++ 1.51 aborts).
    cc.reset();
    std::optional<Duration> wait;
    try {
      wait = client_.Conclude(*call_, method_, context_, *attempt_, std::move(status));
    } catch (...) {  // the user's classify or breaker policy: the caller hears of it
      Finish(std::current_exception());
      return;
    }
    if (!wait) {
      Finish(nullptr);
      return;
    }
    Wait(*wait, &AsyncCall::Step);
  }

  // The client's list of its asynchronous calls (Track, Forget).
  AsyncCall* listed_before = nullptr;
  AsyncCall* listed_after = nullptr;

 private:
  // The next attempt: admitted and sent, or the call ends.
  void Step() { Guarded(&AsyncCall::Admit); }

  void AfterInjectedDelay() { Guarded(&AsyncCall::SendAfterDelay); }

  // Runs a step that may run the user's code (the breaker's policy while
  // the breaker admits, the caller's own attempt): what it throws ends the
  // call, told to `done`, as a throw of classify does. The step's thread
  // is not gRPC's: the end is posted.
  void Guarded(void (AsyncCall::*step)()) {
    SteppingScope scope(this);
    try {
      (this->*step)();
    } catch (...) {
      std::shared_ptr<AsyncCall> sent = std::move(sending_);  // no attempt went out
      Finish(std::current_exception());
    }
  }

  // Admits the next attempt and sends it, or ends the call.
  void Admit() {
    attempt_.reset();
    if (Abandoned()) {
      if (call_->reply.attempts == 0) {
        call_->reply.status = {Code::kCancelled, std::string(kClientDestroyed)};
      }
      Finish(nullptr);
      return;
    }
    if (!client_.NextAttempt(*call_, method_, context_, /*stream=*/false, attempt_)) {
      Finish(nullptr);
      return;
    }
    if (client_.Injects(*call_)) {
      if (auto answer = client_.InjectedAnswer(*call_->fault, *attempt_)) {
        PostAttemptDone(*std::move(answer));
        return;
      }
      TimePoint until = client_.DelayedUntil(*call_->fault, *attempt_);
      Wait(until - client_.runtime.clock->Now(), &AsyncCall::AfterInjectedDelay);
      return;
    }
    SendAttempt();
  }

  void SendAfterDelay() {
    if (auto ended = client_.AfterDelay(*attempt_, context_)) {
      PostAttemptDone(*std::move(ended));
      return;
    }
    SendAttempt();
  }

  // An attempt that ended without an RPC: its status as if from gRPC's
  // thread.
  void PostAttemptDone(Status status) {
    sending_ = shared_from_this();
    Post([this, status = std::move(status)]() mutable { AttemptDone(std::move(status)); });
  }

  // Sends the admitted attempt on a fresh grpc::ClientContext, the caller's
  // cancel wired to it. The call keeps itself alive until the attempt ends.
  void SendAttempt() {
    if (!client_.channel) {
      PostAttemptDone(client_.NoRoute());
      return;
    }
    auto cc = client_.NewContext(*attempt_, context_);
    {
      std::lock_guard lock(mu_);
      cc_ = cc;
      hook_.emplace(context_, [cc] { cc->TryCancel(); });
      if (abandoned_) cc->TryCancel();
    }
    sending_ = shared_from_this();
    hooks_->Send(&cc->grpc(), AttemptFinished(this));
  }

  // Runs `next` after `wait` on the clock, or at once when the caller
  // cancels or the client goes.
  void Wait(Duration wait, void (AsyncCall::*next)()) {
    auto self = shared_from_this();
    std::lock_guard lock(mu_);
    next_ = next;
    wait_ = client_.runtime.clock->ScheduleAfter(wait, [self, next] { (self.get()->*next)(); });
    // A cancel that came first runs the hook at once. Posted: the
    // canceller's thread does not run the call (nor take mu_ again here).
    hook_.emplace(context_, [self] { Post([self] { self->WakeEarly(); }); });
    if (abandoned_) Post([self] { self->WakeEarly(); });
  }

  // Cuts a wait short (the caller cancelled, the client goes): the step
  // that was waiting runs now, unless the timer got there first.
  void WakeEarly() {
    void (AsyncCall::*next)() = nullptr;
    {
      std::lock_guard lock(mu_);
      if (wait_.Cancel()) next = next_;
    }
    if (next != nullptr) (this->*next)();
  }

  bool Abandoned() {
    std::lock_guard lock(mu_);
    return abandoned_;
  }

  // Hands the Reply to `done`, then lets the client go: nothing of the
  // client is touched once the client has forgotten the call.
  void Finish(const std::exception_ptr& thrown) {
    if (stepping == this) {  // not on the stack that started or advanced the call
      Post([self = shared_from_this(), thrown] { self->Finish(thrown); });
      return;
    }
    {
      std::lock_guard lock(mu_);
      hook_.reset();
      wait_ = Timer();
      cc_.reset();
    }
    attempt_.reset();  // an unsettled ticket frees its slot; the span ends
    Reply reply = std::move(call_->reply);
    call_.reset();
    if (!thrown) client_.RecordCall(method_, reply.status, client_.runtime.clock->Now() - start_);
    hooks_->Done(std::move(reply), thrown);
    // The caller's callbacks go while the client, and so its channel, is
    // still there: what they hold (a stub, the channel) is not released
    // last on one of gRPC's threads.
    hooks_.reset();
    client_.Forget(this);
  }

  Client::Impl& client_;
  const std::string method_;
  const Context context_;
  std::unique_ptr<AsyncHooks> hooks_;  // until done has run
  const TimePoint start_;
  std::optional<Client::Impl::CallState> call_;
  std::optional<AttemptState> attempt_;
  std::shared_ptr<AsyncCall> sending_;  // this, while an attempt is out

  std::mutex mu_;                        // what a cancel, Abandon and the wait's timer reach
  std::shared_ptr<AttemptContext> cc_;   // the attempt in flight
  std::optional<CancelHook> hook_;       // the caller's cancel, on the attempt or the wait
  Timer wait_;                           // before the next attempt, or an injected delay
  void (AsyncCall::*next_)() = nullptr;  // what the wait leads to
  bool abandoned_ = false;
};

}  // namespace internal

void AttemptFinished::operator()(Status status) const { call_->AttemptDone(std::move(status)); }

void Client::Impl::Track(internal::AsyncCall* call) {
  std::lock_guard lock(async_mu);
  call->listed_after = async_calls;
  if (async_calls != nullptr) async_calls->listed_before = call;
  async_calls = call;
}

void Client::Impl::Forget(internal::AsyncCall* call) {
  std::lock_guard lock(async_mu);
  if (call->listed_before != nullptr) call->listed_before->listed_after = call->listed_after;
  if (call->listed_after != nullptr) call->listed_after->listed_before = call->listed_before;
  if (async_calls == call) async_calls = call->listed_after;
  if (async_calls == nullptr) async_done.notify_all();
}

void Client::Impl::EndAsyncCalls() {
  std::unique_lock lock(async_mu);
  // A call stays listed, and alive, until its done has returned.
  for (internal::AsyncCall* call = async_calls; call != nullptr; call = call->listed_after) {
    call->Abandon();
  }
  async_done.wait(lock, [this] { return async_calls == nullptr; });
}

void Client::StartAsync(std::string_view method, std::unique_ptr<internal::AsyncHooks> hooks,
                        const Context& context) {
  auto call = std::make_shared<internal::AsyncCall>(*impl_, method, context, std::move(hooks));
  impl_->Track(call.get());
  call->Start();
}

namespace {

// CallAsync by name: the messages of the call's attempts, on the generic
// stub; the last attempt's response is the Reply's body.
class ByNameHooks final : public internal::AsyncHooks {
 public:
  ByNameHooks(grpc::GenericStub* stub, std::string_view method, std::string_view request,
              Client::Done done)
      : stub_(stub),
        method_(method),
        request_(internal::ToByteBuffer(request)),
        done_(std::move(done)) {}

  void Send(grpc::ClientContext* attempt, AttemptFinished finished) override {
    stub_->UnaryCall(
        attempt, method_, grpc::StubOptions(), &request_, &response_,
        [finished](const grpc::Status& status) { finished(internal::ToStatus(status)); });
  }

  void Done(Reply reply, std::exception_ptr thrown) override {
    if (reply.status.ok()) reply.body = internal::ToString(response_);
    done_(std::move(reply), std::move(thrown));
  }

 private:
  grpc::GenericStub* stub_;
  const std::string method_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  Client::Done done_;
};

// InvokeAsync: the caller's attempt and done as they were given.
class FunctionHooks final : public internal::AsyncHooks {
 public:
  FunctionHooks(Client::AsyncAttempt attempt, Client::Done done)
      : attempt_(std::move(attempt)), done_(std::move(done)) {}
  void Send(grpc::ClientContext* attempt, AttemptFinished finished) override {
    attempt_(attempt, finished);
  }
  void Done(Reply reply, std::exception_ptr thrown) override {
    done_(std::move(reply), std::move(thrown));
  }

 private:
  Client::AsyncAttempt attempt_;
  Client::Done done_;
};

}  // namespace

void Client::CallAsync(std::string_view method, std::string_view request, Done done,
                       const Context& context) {
  StartAsync(method,
             std::make_unique<ByNameHooks>(impl_->stub.get(), method, request, std::move(done)),
             context);
}

void Client::InvokeAsync(std::string_view method, AsyncAttempt attempt, Done done,
                         const Context& context) {
  StartAsync(method, std::make_unique<FunctionHooks>(std::move(attempt), std::move(done)), context);
}

}  // namespace outbound::rpc
