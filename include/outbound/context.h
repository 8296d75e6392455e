// outbound/context.h
//
// What one call carries besides its request: a deadline and a way for the
// caller to give up. (Trace context and baggage join it with telemetry.)
//
//   CancelSource cancel;
//   Context ctx{.deadline = clock.Now() + 2s, .cancel = cancel.token()};
//   auto call = payments.SendAsync(Get("/charges/1").WithContext(ctx));
//   cancel.Cancel();  // the call ends with ErrorKind::kCancelled
#ifndef OUTBOUND_CONTEXT_H_
#define OUTBOUND_CONTEXT_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "outbound/clock.h"

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
};

}  // namespace outbound

#endif  // OUTBOUND_CONTEXT_H_
