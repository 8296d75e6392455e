// SPDX-License-Identifier: Apache-2.0
// The pieces every gRPC attempt is made of, shared by the client's unary
// calls (client.cc) and its streams (stream.cc): an attempt's state, the
// caller's cancel wired to a ClientContext, the bound on a stream's
// opening, and conversions between grpc++'s types and the library's.
// Private to the rpc library.
#ifndef OUTBOUND_SRC_RPC_CALL_PARTS_H_
#define OUTBOUND_SRC_RPC_CALL_PARTS_H_

#include <grpc/support/time.h>
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "names.h"
#include "outbound/circuit/breaker.h"
#include "outbound/clock.h"
#include "outbound/context.h"
#include "outbound/internal/timeout_list.h"
#include "outbound/rpc/client.h"
#include "outbound/telemetry/trace.h"

namespace outbound::rpc::internal {

class BlockingCall;

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

inline bool Cancelled(const Context& context) {
  return context.cancel && context.cancel->cancelled();
}

// The status of a call the client's destruction ended before any attempt
// had one of its own, or whose attempt it cancelled.
inline constexpr std::string_view kClientDestroyed =
    "the client was destroyed before the call ended";

// Blocks until notified: by a timer on the clock, an attempt's completion,
// the caller's cancel or the client's destruction.
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

inline std::string ToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

// A serialised message as grpc++ sends it (one copied slice).
inline grpc::ByteBuffer ToByteBuffer(std::string_view bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

inline std::string Millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

// "/pkg.Service/Method" as its service and method.
inline std::pair<std::string_view, std::string_view> SplitMethod(std::string_view full) {
  if (!full.empty() && full.front() == '/') full.remove_prefix(1);
  auto slash = full.find('/');
  if (slash == std::string_view::npos) return {full, {}};
  return {full.substr(0, slash), full.substr(slash + 1)};
}

using OnMessage = std::function<void(std::string_view)>;

inline Status ToStatus(const grpc::Status& status) {
  return Status{static_cast<Code>(status.error_code()), status.error_message()};
}

inline void ReadTrailers(const grpc::ClientContext& cc, Trailers& trailers) {
  for (const auto& [name, value] : cc.GetServerTrailingMetadata()) {
    trailers.emplace(std::string(name.data(), name.size()),
                     std::string(value.data(), value.size()));
  }
}

// The breaker's slow-call rule (Config::slow_call): a unary attempt not
// answered `slow_call` after it was sent is counted a failure then, on the
// clock's thread, so a hung dependency opens the breaker long before the
// attempt's Timeout; the attempt goes on, and its result is not counted
// again. Streams are left out: their life is the caller's.
struct SlowRule {
  SlowRule(circuit::Ticket* t, telemetry::SpanContext c) : ticket(t), cause(std::move(c)) {}
  // The attempt has its result: the rule leaves the ticket alone.
  void Disarm() {
    std::lock_guard lock(mu);
    ticket = nullptr;
  }
  std::mutex mu;
  circuit::Ticket* ticket;       // null once disarmed
  telemetry::SpanContext cause;  // the call's trace, for a transition's log record
  bool counted = false;
  std::exception_ptr thrown;  // what the user's breaker policy threw
};

// One attempt, once the breaker admitted it: what it is made with, and
// what it reports back to the loop. It stays where it was made (the slow
// rule points into it).
struct AttemptState {
  std::optional<TimePoint> deadline;      // for the attempt's grpc::ClientContext
  std::unique_ptr<telemetry::Span> span;  // null without a tracer
  circuit::Ticket ticket;                 // settled by the loop, unless a stream took it
  std::string body;                       // a unary response's bytes
  Trailers trailers;                      // the server's trailing metadata
  bool committed = false;                 // a message reached the caller: never sent again
  bool opened = false;                    // a stream opened and took the ticket and span
  std::optional<TimePoint> open_by;       // a stream's: when its opening gives up
  std::shared_ptr<SlowRule> slow;         // only when the rule is on (slow_call set)
  Timer slow_timer;                       // when the slow rule counts the attempt
  BlockingCall* blocking = nullptr;       // the blocking call it is part of; null if async
};

// A span of time as gRPC takes it (a negative one as none).
inline gpr_timespec Timespan(Duration d) {
  return gpr_time_from_nanos(std::max(d, Duration::zero()).count(), GPR_TIMESPAN);
}

// An attempt's remaining time as gRPC's clock runs it: the Runtime's clock
// decides how much is left, gRPC's clock when it ends.
inline gpr_timespec Remaining(const Clock& clock, TimePoint until) {
  return Timespan(until - clock.Now());
}

// One attempt's grpc::ClientContext, its deadline kept by the library.
//
// gRPC's own deadline checking is off on the client's channel: it arms one
// of gRPC's timers per call, about 3 000 instructions a call, 5 % of a
// small unary call's cost. The deadline is still set, so gRPC sends it
// (grpc-timeout) and the server knows it; here an entry in the client's
// TimeoutList, in real time as gRPC's deadline was, cancels the context
// when it passes, and the attempt ends DEADLINE_EXCEEDED as it would have.
// Timeouts of one length arrive in deadline order: arming appends to the
// list and the attempt's end unlinks it, under one short lock.
//
// Held by shared_ptr: a cancel hook, an opening bound or the stream may
// hold it past the attempt, and past the client; it holds the list.
class AttemptContext final : public outbound::internal::TimeoutList::Entry,
                             public std::enable_shared_from_this<AttemptContext> {
 public:
  // `deadlines` runs on `grpc_clock`, the real time gRPC's clock reads;
  // `remaining` is what is left of the attempt's deadline, none for none.
  static std::shared_ptr<AttemptContext> Make(
      const std::shared_ptr<outbound::internal::TimeoutList>& deadlines, Clock& grpc_clock,
      std::optional<Duration> remaining) {
    auto context = std::make_shared<AttemptContext>(Private{});
    if (!remaining) return context;
    context->grpc_.set_deadline(Timespan(*remaining));
    context->deadlines_ = deadlines;
    deadlines->Arm(*context, grpc_clock.Now() + std::max(*remaining, Duration::zero()));
    return context;
  }

  struct Private {};  // for Make alone
  explicit AttemptContext(Private /*unused*/) {}
  ~AttemptContext() override {
    if (deadlines_ != nullptr) deadlines_->Cancel(*this);  // Expired() has returned
  }
  AttemptContext(const AttemptContext&) = delete;
  AttemptContext& operator=(const AttemptContext&) = delete;

  grpc::ClientContext& grpc() { return grpc_; }
  void TryCancel() { grpc_.TryCancel(); }

  // The attempt's status as the caller sees it: cancelled because its
  // deadline passed is DEADLINE_EXCEEDED, as gRPC's own check says it.
  Status Ended(Status status) const {
    if (status.code == Code::kCancelled && expired_.load(std::memory_order_acquire)) {
      return {Code::kDeadlineExceeded, "the attempt's deadline passed"};
    }
    return status;
  }
  Status Ended(const grpc::Status& status) const { return Ended(ToStatus(status)); }

 private:
  // On the clock's thread. Holds the context while it cancels it: the
  // cancel may end the attempt (grpc++ may run the call's callback within
  // TryCancel), and its owner let the context go. If the owner let it go
  // first, ~AttemptContext waits in Cancel until this returns.
  void Expired() override {
    std::shared_ptr<AttemptContext> self = weak_from_this().lock();
    if (!self) return;  // going: the attempt has ended
    expired_.store(true, std::memory_order_release);
    grpc_.TryCancel();
  }

  grpc::ClientContext grpc_;
  std::shared_ptr<outbound::internal::TimeoutList> deadlines_;  // null without a deadline
  std::atomic<bool> expired_{false};
};

// Timeout bounds a stream's opening, though the open stream has only the
// caller's deadline: a connection that hangs while it is made (a TLS
// handshake nobody answers, a connect the network drops) would otherwise
// hold the opening until gRPC's own connect timeout, 20 s. At open_by the
// attempt's context is cancelled unless the stream opened first, and the
// attempt ends DEADLINE_EXCEEDED.
class OpeningBound {
 public:
  OpeningBound(const Clock& clock, std::optional<TimePoint> by, std::shared_ptr<AttemptContext> cc)
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
    std::shared_ptr<AttemptContext> cc;
  };
  std::shared_ptr<State> state_;
  grpc::Alarm alarm_;
};

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_CALL_PARTS_H_
