// SPDX-License-Identifier: Apache-2.0
// The bulkhead: at most `max_calls` of the client's calls in flight. A
// call over it waits in a FIFO queue (if the queue has room) until a call
// ends and hands it its place, for at most `max_wait`; otherwise it fails
// at once with kRejected and nothing is sent. A queued call whose caller
// cancels, or whose deadline passes, stops waiting.
#include <deque>
#include <mutex>

#include "layers.h"

namespace outbound::http::internal {
namespace {

class BulkheadLayer;

// A call waiting for a place. Ends once: with a place, at its wait's end,
// or cancelled.
class Queued final : public Cancellable {
 public:
  Queued(BulkheadLayer& bulkhead, std::shared_ptr<CallState> call)
      : bulkhead_(bulkhead), call_(std::move(call)) {}
  void Arm(Clock& clock, Duration wait, const std::shared_ptr<Queued>& self);
  // Takes a place handed over: false if the call stopped waiting first.
  bool Go();
  void Expire();
  void Cancel(CancelReason reason) override;
  bool waiting() const { return !done_.load(); }

 private:
  // Whether this call was still waiting (and is now not).
  bool Leave();

  BulkheadLayer& bulkhead_;
  std::shared_ptr<CallState> call_;
  std::atomic<bool> done_{false};
  std::mutex mu_;  // the timer
  Timer timer_;
};

class BulkheadLayer final : public CallLayer {
 public:
  BulkheadLayer(Clock& clock, Bulkhead bulkhead) : clock_(clock), bulkhead_(bulkhead) {}

  std::string_view name() const override { return "bulkhead"; }

  void Send(CallState& call) override {
    enum class Verdict { kGo, kWait, kFull } verdict;
    {
      std::lock_guard lock(mu_);
      if (in_flight_ < bulkhead_.max_calls) {
        ++in_flight_;
        verdict = Verdict::kGo;
      } else if (waiting_ < bulkhead_.max_queued) {
        ++waiting_;
        verdict = Verdict::kWait;
      } else {
        verdict = Verdict::kFull;
      }
    }
    // Outside the lock: what runs next may be the user's code (a callback,
    // middleware), which may send another call through this client.
    if (verdict == Verdict::kGo) return Pass(call);
    if (verdict == Verdict::kWait) return Queue(call);
    Reject(call,
           "the bulkhead is full (" + std::to_string(bulkhead_.max_calls) + " calls in flight" +
               (bulkhead_.max_queued > 0 ? ", " + std::to_string(bulkhead_.max_queued) + " waiting"
                                         : "") +
               "): nothing was sent");
  }

  bool Finish(CallState&, CallOutcome&) override {
    Release();
    return true;
  }

  void Pass(CallState& call) { call.Proceed(*this); }

  // A queued call no longer waits: it took the place handed to it, or it
  // was cancelled or its wait ran out (Release then skips it in the queue).
  void DoneWaiting() {
    std::lock_guard lock(mu_);
    --waiting_;
  }

  static void Reject(CallState& call, const std::string& why) {
    CallOutcome outcome;
    outcome.result = Fail(ErrorKind::kRejected, why);
    call.End(std::move(outcome));
  }

  Duration max_wait() const { return bulkhead_.max_wait; }

 private:
  // The call (counted in waiting_) waits for a place. Its cancel target is
  // set before any Release can see it in the queue, so the retry loop's,
  // set once it proceeds, is never overwritten.
  void Queue(CallState& call) {
    auto queued = std::make_shared<Queued>(*this, call.shared_from_this());
    call.SetCancelTarget(queued);  // a call cancelled already ends here
    bool place = false;
    {
      std::lock_guard lock(mu_);
      if (!queued->waiting()) return;  // cancelled: DoneWaiting gave its count back
      if (in_flight_ < bulkhead_.max_calls) {
        ++in_flight_;  // a place freed since Send looked
        place = true;
      } else {
        while (!queue_.empty() && !queue_.front()->waiting()) queue_.pop_front();
        queue_.push_back(queued);
      }
    }
    if (!place) return queued->Arm(clock_, bulkhead_.max_wait, queued);
    if (!queued->Go()) Release();  // cancelled just now: the place goes on
  }

  // A call's place goes to the oldest call still waiting, or is freed.
  void Release() {
    for (;;) {
      std::shared_ptr<Queued> next;
      {
        std::lock_guard lock(mu_);
        if (queue_.empty()) {
          --in_flight_;
          return;
        }
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      // One that stopped waiting meanwhile took no place: the next one.
      if (next->Go()) return;
    }
  }

  Clock& clock_;
  const Bulkhead bulkhead_;
  std::mutex mu_;
  int in_flight_ = 0;
  int waiting_ = 0;  // queued and still waiting
  std::deque<std::shared_ptr<Queued>> queue_;
};

void Queued::Arm(Clock& clock, Duration wait, const std::shared_ptr<Queued>& self) {
  std::lock_guard lock(mu_);
  if (done_.load()) return;
  timer_ = clock.ScheduleAfter(wait, [self] { self->Expire(); });
}

bool Queued::Leave() {
  if (done_.exchange(true)) return false;
  std::lock_guard lock(mu_);
  timer_.Cancel();
  return true;
}

bool Queued::Go() {
  if (!Leave()) return false;
  bulkhead_.DoneWaiting();
  bulkhead_.Pass(*call_);
  return true;
}

void Queued::Expire() {
  if (done_.exchange(true)) return;  // the timer is the one running
  bulkhead_.DoneWaiting();
  BulkheadLayer::Reject(
      *call_,
      "the bulkhead stayed full for " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::milliseconds>(bulkhead_.max_wait()).count()) +
          "ms, the longest a call waits for it: nothing was sent");
}

void Queued::Cancel(CancelReason reason) {
  if (!Leave()) return;
  bulkhead_.DoneWaiting();
  call_->End(StoppedWaiting(reason, "the bulkhead"));
}

}  // namespace

std::unique_ptr<CallLayer> MakeBulkhead(Clock& clock, Bulkhead bulkhead) {
  return std::make_unique<BulkheadLayer>(clock, bulkhead);
}

}  // namespace outbound::http::internal
