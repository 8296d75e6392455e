// SPDX-License-Identifier: Apache-2.0
// outbound/context.h
//
// What one call carries besides its request: a deadline, a way for the
// caller to give up, and the caller's trace context and baggage, which
// every attempt passes on to the dependency (`traceparent`, `baggage`).
//
// example: examples/headers/core.cc#context
//   CancelSource cancel;
//   Context ctx{.deadline = clock.Now() + 2s, .cancel = cancel.token()};
//   auto call = payments.SendAsync(http::Request::Get("/charges/1").WithContext(ctx));
//   cancel.Cancel();  // the call ends with ErrorKind::kCancelled
#ifndef OUTBOUND_CONTEXT_H_
#define OUTBOUND_CONTEXT_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "outbound/clock.h"
#include "outbound/telemetry/propagation.h"
#include "outbound/telemetry/trace.h"

namespace outbound {

namespace internal {
// Shared by a CancelSource and its tokens. Thread-safe.
class CancelState {
 public:
  // Runs `fn` when cancelled (at once if already). Returns an id for Forget.
  int OnCancel(std::function<void()> fn);
  void Forget(int id);
  void Cancel();
  bool cancelled() const;

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  int next_id_ = 0;
  std::vector<std::pair<int, std::function<void()>>> callbacks_;
};
}  // namespace internal

// A caller's handle to give up on calls. Thread-safe; cheap to copy tokens.
class CancelSource {
 public:
  CancelSource() : state_(std::make_shared<internal::CancelState>()) {}
  // Ends every call whose context holds this source's token.
  void Cancel() { state_->Cancel(); }
  bool cancelled() const { return state_->cancelled(); }
  std::shared_ptr<internal::CancelState> token() const { return state_; }

 private:
  std::shared_ptr<internal::CancelState> state_;
};

struct Context {
  // The call ends by this time at the latest; the client's Timeout applies
  // too, and the earlier of the two wins.
  std::optional<TimePoint> deadline;
  // From a CancelSource; null means the caller never cancels.
  std::shared_ptr<internal::CancelState> cancel;
  // The caller's span (e.g. its server span for the request being served):
  // every attempt's span is its child. Invalid (the default): a new trace.
  telemetry::SpanContext trace;
  // Passed on to the dependency in each attempt's `baggage` header.
  telemetry::Baggage baggage;
};

}  // namespace outbound

#endif  // OUTBOUND_CONTEXT_H_
