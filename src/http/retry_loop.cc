// SPDX-License-Identifier: Apache-2.0
// The retry loop: the attempts of one request. Each attempt's classification
// goes to retry::Loop, which decides; the client then adds its own rules: a
// request that is not safe to repeat is sent once, a stream (a pipe's body)
// only while it opens, and a response whose body exceeds 64 KiB is returned
// rather than retried. Waits run on the clock.
#include <mutex>
#include <utility>

#include "body_pipe_link.h"
#include "layers.h"

namespace outbound::http::internal {
namespace {

// Bodies of retried responses are kept (they are what the call returns if
// the wait is cut short) up to this size; a larger one is not retried.
constexpr std::size_t kRetriedBodyLimit = 64 * 1024;

// Attempts taken down by a connection whose loss another attempt already
// counted, and attempts the server did not process while it answers
// others, are sent again at once, outside the budget and MaxAttempts (as
// gRPC's transparent retries are), this many times per request at most.
constexpr int kMaxCollateralRetries = 3;
// Sends of a request left out by retired connections (AttemptOutcome::
// connection_retired). Each one means the server answered others first, so
// a request waits its turn through a few rotations (with queue places
// kept, 64 in flight on connections retired after 10 requests each should
// leave one out about 6 times; tests/peers/nginx_test.cc runs that case).
constexpr int kMaxRetiredRetries = 10;

class RetryingRequest final : public AttemptOwner,
                              public Cancellable,
                              public std::enable_shared_from_this<RetryingRequest> {
 public:
  RetryingRequest(const AttemptPath& attempts, const RetryLoopOptions& options,
                  std::shared_ptr<CallState> call)
      : attempts_path_(attempts),
        options_(options),
        call_(std::move(call)),
        request_(call_->request),
        loop_(options.retrier->Start(call_->deadline())),
        idempotent_(Idempotent(*request_)) {}

  void StartAttempt() {
    auto attempt = std::make_shared<Attempt>(attempts_path_);
    {
      std::unique_lock lock(mu_);
      if (finished_) return;
      if (cancelled_ != CancelReason::kNone) {
        // The deadline or the caller came before this attempt: nothing more
        // is sent, and the call ends with what the last attempt got.
        lock.unlock();
        return FinishCancelled();
      }
      waiting_ = false;
      attempt->request = request_;
      attempt->number = ++attempts_;
      attempt->resend_count = call_->attempts++;
      attempt->repeat = std::exchange(repeat_next_, false);
      attempt->queue_place = std::exchange(keep_place_, 0);
      attempt->call = call_;
      attempt->owner = shared_from_this();
      attempt->started = options_.clock->Now();
      current_ = attempt;
    }
    attempt->Begin();
  }

  // The call's deadline passed or the caller gave up: at any moment, before
  // the first attempt, during one, or between two.
  void Cancel(CancelReason reason) override {
    std::shared_ptr<Attempt> attempt;
    bool waiting;
    {
      std::lock_guard lock(mu_);
      if (cancelled_ != CancelReason::kNone) return;
      cancelled_ = reason;
      attempt = current_;
      waiting = waiting_;
    }
    if (attempt) return attempt->Cancel(reason);
    // Waiting between attempts: the call returns what the last attempt got.
    // Not started yet: StartAttempt sees cancelled_ and sends nothing.
    if (waiting) FinishCancelled();
  }

  void Decide(AttemptOutcome& outcome) override {
    using retry::DecisionKind;
    using retry::ReasonKind;
    DecisionKind decided = DecisionKind::kStopped;
    retry::Reason reason{ReasonKind::kClassify};
    Duration wait{0};
    // A buffered body can be sent again; a pipe's while it opens, until
    // the answer's body begins (and Rewind below says whether it still can).
    BodyPipe* pipe = request_->body_source.pipe.get();
    const bool replayable = request_->replayable || (pipe != nullptr && !outcome.body_streamed);
    const bool safe = idempotent_ && replayable;
    // Why a request that wanted another attempt may not have one.
    ReasonKind unsafe = replayable ? ReasonKind::kUnsafe : ReasonKind::kBodyNotReplayable;
    if (outcome.result && options_.transparent != nullptr) options_.transparent->Earn();
    if (outcome.collateral && !outcome.thrown) {
      bool again = safe && collateral_retries_ < kMaxCollateralRetries;
      collateral_retries_ += again ? 1 : 0;
      decided = again ? DecisionKind::kAgain : DecisionKind::kStopped;
      reason.kind = again ? ReasonKind::kTransparent : safe ? ReasonKind::kExhausted : unsafe;
    } else if (outcome.unprocessed && outcome.connection_retired && !outcome.thrown && replayable &&
               retired_retries_ < kMaxRetiredRetries) {
      // Left out by a connection the server retired after answering
      // others: sent again at once on a new one, spending nothing.
      ++retired_retries_;
      decided = DecisionKind::kAgain;
      reason.kind = ReasonKind::kTransparent;
    } else if (outcome.unprocessed && !outcome.thrown && replayable &&
               collateral_retries_ < kMaxCollateralRetries && options_.transparent != nullptr &&
               options_.transparent->TrySpend()) {
      // Not processed, while the dependency answers others: sent again at
      // once, outside the budget and MaxAttempts (see TransparentRetries).
      ++collateral_retries_;
      decided = DecisionKind::kAgain;
      reason.kind = ReasonKind::kTransparent;
    } else if (!outcome.thrown && !outcome.rejected && outcome.classification) {
      const Classification& c = *outcome.classification;
      retry::Decision d =
          loop_.Done(c.retry, c.retry_after, options_.clock->Now(), options_.random->Uniform());
      decided = d.kind;
      reason.kind = d.reason;
      wait = d.wait;
      if (d.kind == DecisionKind::kStopped) reason.kind = StopReason();
      if (d.kind == DecisionKind::kAgain) {
        // A request the server did not act on (it said so) or never
        // received may go again whatever its method.
        bool may_repeat = safe || ((outcome.unprocessed || outcome.not_sent) && replayable);
        if (!may_repeat) {
          decided = DecisionKind::kStopped;
          reason.kind = unsafe;
        } else if (outcome.result && outcome.result->body.size() > kRetriedBodyLimit) {
          decided = DecisionKind::kStopped;
          reason.kind = ReasonKind::kTooLarge;
        }
      }
    } else if (outcome.rejected) {
      // A rejection is never retried at once. The breaker is the only
      // attempt layer that turns attempts away.
      reason = {ReasonKind::kRejected, retry::Rejecter::kBreaker};
    }
    // A middleware asks for the request once more (a refreshed credential):
    // at once, outside the policy, once per call.
    bool repeat = outcome.repeat_once && !outcome.thrown && !outcome.rejected &&
                  decided != DecisionKind::kAgain && !call_->repeated && replayable;
    if (repeat) {
      call_->repeated = true;
      decided = DecisionKind::kAgain;
      reason.kind = ReasonKind::kRepeat;
    }
    // The next attempt takes the pipe's body from its start; more than
    // BodyPipe::kReplayBytes sent, the stream cannot go again.
    if (decided == DecisionKind::kAgain && pipe != nullptr && !PipeLink::Rewind(*pipe)) {
      decided = DecisionKind::kStopped;
      reason.kind = ReasonKind::kBodyNotReplayable;
      repeat = false;
    }
    repeat_decided_ = repeat;
    wait_ = wait;
    outcome.record.decision = decided;
    outcome.record.reason = reason;
    options_.telemetry->resilience().RetryDecided(decided, reason);
  }

  void Ended(AttemptOutcome&& outcome) override {
    if (!outcome.record.decision) Decide(outcome);
    const retry::DecisionKind decided = *outcome.record.decision;
    const bool repeat = repeat_decided_;
    const Duration wait = wait_;
    if (options_.on_attempt) {
      outcome.record.method = request_->method;
      outcome.record.url = request_->url;
      options_.on_attempt(outcome.record);
    }

    if (decided != retry::DecisionKind::kAgain) return Finish(std::move(outcome));
    // A request the server did not process, or one a lost connection took
    // down with others, goes again at once: there is nothing to wait out.
    bool at_once = outcome.collateral || outcome.unprocessed || repeat;
    bool cancelled;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      repeat_next_ = repeat;
      waiting_ = true;
      // Left out, not failed: the next attempt keeps this one's turn.
      bool left_out = outcome.collateral || outcome.unprocessed;
      keep_place_ = left_out && current_ ? current_->queue_place : 0;
      current_.reset();
      last_ = std::move(outcome);
      // A cancellation that came while this attempt was ending found no
      // attempt to cancel: the call ends now, not after the wait.
      cancelled = cancelled_ != CancelReason::kNone;
      if (!cancelled && !at_once) {
        // The timer keeps this request alive while it waits.
        wait_timer_ = options_.clock->ScheduleAfter(
            wait, [self = shared_from_this()] { self->StartAttempt(); });
      }
    }
    if (cancelled) return FinishCancelled();
    if (at_once) StartAttempt();
  }

 private:
  // Why the classification said stop: the call's own end (its caller gave
  // up, its deadline passed) or the classifier's word.
  retry::ReasonKind StopReason() const {
    if (call_->deadline_passed()) return retry::ReasonKind::kDeadline;
    if (call_->cancelled()) return retry::ReasonKind::kCancelled;
    return retry::ReasonKind::kClassify;
  }

  // Ends a cancelled call: with the last attempt's outcome if there was
  // one, or as the cancellation says if nothing was sent.
  void FinishCancelled() {
    std::optional<AttemptOutcome> last;
    CancelReason reason;
    {
      std::lock_guard lock(mu_);
      last = std::move(last_);
      last_.reset();
      reason = cancelled_;
    }
    if (last) return Finish(std::move(*last));
    AttemptOutcome outcome;
    outcome.result = reason == CancelReason::kCancelled || reason == CancelReason::kClientDestroyed
                         ? Fail(ErrorKind::kCancelled, CancelledMessage(reason))
                         : Fail(ErrorKind::kDeadline, "the call's deadline passed");
    Finish(std::move(outcome));
  }

  void Finish(AttemptOutcome&& outcome) {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
      current_.reset();
      last_.reset();
    }
    wait_timer_.Cancel();
    CallOutcome call_outcome;
    call_outcome.thrown = outcome.thrown;
    call_outcome.result = std::move(outcome.result);
    if (!call_outcome.result) call_outcome.result.error().set_attempts(call_->attempts_sent.load());
    call_->End(std::move(call_outcome));
  }

  const AttemptPath& attempts_path_;
  const RetryLoopOptions& options_;
  std::shared_ptr<CallState> call_;
  std::shared_ptr<const CallRequest> request_;
  retry::Loop loop_;
  const bool idempotent_;  // the method's rule; the body's is each attempt's

  std::mutex mu_;
  int attempts_ = 0;
  bool finished_ = false;
  bool waiting_ = false;
  CancelReason cancelled_ = CancelReason::kNone;
  int collateral_retries_ = 0;  // the attempt path's own: one attempt at a time
  int retired_retries_ = 0;
  std::uint64_t keep_place_ = 0;  // the next attempt's queue place (Attempt::queue_place)
  bool repeat_next_ = false;      // guarded by mu_
  // What Decide decided for the attempt now ending, for its Ended (one
  // attempt at a time).
  bool repeat_decided_ = false;
  Duration wait_{0};
  std::shared_ptr<Attempt> current_;
  std::optional<AttemptOutcome> last_;  // what the call returns if a wait is cut short
  Timer wait_timer_;
};

class RetryLoop final : public CallLayer {
 public:
  RetryLoop(const AttemptPath& attempts, RetryLoopOptions options)
      : attempts_(attempts), options_(std::move(options)) {}

  std::string_view name() const override { return "retry loop"; }

  void Send(const std::shared_ptr<CallState>& call) override {
    auto retrying = std::make_shared<RetryingRequest>(attempts_, options_, call);
    call->SetCancelTarget(retrying);
    retrying->StartAttempt();
  }

  // The last call layer: it ends requests (End) and hands nothing on.
  bool Finish(CallState&, CallOutcome&) override { return true; }

 private:
  const AttemptPath& attempts_;
  RetryLoopOptions options_;
};

}  // namespace

bool Idempotent(const CallRequest& request) {
  if (request.idempotent) return *request.idempotent;
  static constexpr std::string_view kIdempotent[] = {"GET",   "HEAD", "OPTIONS",
                                                     "TRACE", "PUT",  "DELETE"};
  for (std::string_view method : kIdempotent) {
    if (request.method == method) return true;
  }
  return !FindHeader(request.headers, "Idempotency-Key").empty() ||
         !FindHeader(request.headers, "X-Idempotency-Key").empty();
}

std::unique_ptr<CallLayer> MakeRetryLoop(const AttemptPath& attempts, RetryLoopOptions options) {
  return std::make_unique<RetryLoop>(attempts, std::move(options));
}

}  // namespace outbound::http::internal
