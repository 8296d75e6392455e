// SPDX-License-Identifier: Apache-2.0
// The retry loop: the attempts of one request. Each attempt's classification
// goes to retry::Loop, which decides; the client then adds its own rules: a
// request that is not safe to repeat is sent once, a stream (a pipe's body)
// only while it opens, and a response whose body exceeds 64 KiB is returned
// rather than retried. Waits run on the clock.
//
// With hedging on (Settings::hedging), more than one attempt of a request
// may be in flight: each attempt arms a hedge timer, which starts one more
// beside it if the rules allow (Hedge); the first outcome that ends the
// call wins and cancels the others, and the call ends once none is left.
#include <algorithm>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "../core/recycled.h"
#include "body_pipe_link.h"
#include "layers.h"
#include "outbound/internal/mutex.h"

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

class RetryingRequest;

// One attempt of the request in flight, as its owner: Decide and Ended
// hear which attempt ended, since with hedging several are in flight at
// once. A slot of its request (the attempt's owner pointer shares the
// request's ownership: nothing is allocated per attempt); the request's
// lock guards it.
struct InFlight final : AttemptOwner {
  void Decide(AttemptOutcome& outcome) override;
  void Ended(AttemptOutcome&& outcome) override;

  RetryingRequest* request = nullptr;  // whose slot this is
  std::shared_ptr<Attempt> attempt;    // set while in flight: the slot is taken
  bool hedge = false;
  bool decided = false;  // Decide ran: no longer counted as awaiting an answer
  // Cancelled: another attempt's answer ends the call, or a repeat
  // supersedes this one. Never awaited: its answer decides nothing.
  bool lost = false;
  // What Decide decided, for Ended.
  bool repeat = false;
  Duration wait{0};
};

// Slots for attempts in flight with hedging on. A retry starts when none
// awaits an answer, so besides it only attempts still ending (at most
// max_attempts_in_flight, 10) hold one; a hedge that finds none free is
// not sent. Without hedging one attempt is in flight at a time: one slot.
constexpr std::size_t kMaxInFlight = 12;

class RetryingRequest final : public Cancellable,
                              public std::enable_shared_from_this<RetryingRequest> {
 public:
  RetryingRequest(const AttemptPath& attempts, const RetryLoopOptions& options,
                  std::shared_ptr<CallState> call)
      : attempts_path_(attempts),
        options_(options),
        call_(std::move(call)),
        request_(call_->request),
        idempotent_(Idempotent(*request_)),
        hedgeable_(options.hedging != nullptr && idempotent_ && request_->replayable &&
                   !request_->body_source && !call_->body_sink),
        loop_(call_->policy->retrier.Start(call_->deadline())) {
    if (options.hedging != nullptr) options.hedging->CallStarted();
    if (hedgeable_) {
      hedge_slots_ = std::make_unique<InFlight[]>(kMaxInFlight);
      flights_ = {hedge_slots_.get(), kMaxInFlight};
    }
    for (InFlight& flight : flights_) flight.request = this;
  }

  void StartAttempt() {
    std::shared_ptr<Attempt> attempt;
    {
      std::unique_lock lock(mu_);
      if (finished_ || ending_) return;
      if (cancelled_ != CancelReason::kNone) {
        // The deadline or the caller came before this attempt: nothing more
        // is sent, and the call ends with what the last attempt got.
        lock.unlock();
        return FinishCancelled();
      }
      attempt = NewAttempt(/*hedge=*/false);
    }
    if (attempt == nullptr) {
      AttemptOutcome outcome;
      outcome.result = Fail(ErrorKind::kLocalResource, "internal error: no slot for an attempt");
      return Finish(std::move(outcome));
    }
    attempt->Begin();
  }

  // The call's deadline passed or the caller gave up: at any moment, before
  // the first attempt, during some, or between two.
  void Cancel(CancelReason reason) override {
    std::vector<std::shared_ptr<Attempt>> attempts;
    bool waiting;
    {
      std::lock_guard lock(mu_);
      if (cancelled_ != CancelReason::kNone) return;
      cancelled_ = reason;
      // Those decided are ending already (with hedging: see Decide).
      for (const InFlight& flight : flights_) {
        if (flight.attempt && (!hedgeable_ || !flight.decided)) attempts.push_back(flight.attempt);
      }
      waiting = waiting_;
      hedge_timer_.Cancel();
    }
    for (const auto& attempt : attempts) attempt->Cancel(reason);
    if (!attempts.empty()) return;
    // Waiting between attempts: the call returns what the last attempt got.
    // Not started yet: StartAttempt sees cancelled_ and sends nothing.
    if (waiting) FinishCancelled();
  }

  void Decide(InFlight& flight, AttemptOutcome& outcome) {
    using retry::DecisionKind;
    using retry::ReasonKind;
    DecisionKind decided = DecisionKind::kStopped;
    retry::Reason reason{ReasonKind::kClassify};
    Duration wait{0};
    bool repeat = false;
    {
      // Without hedging one attempt is in flight at a time, and only its
      // own thread touches what Decide does (Cancel reads no `decided`
      // then): no lock, as before hedging.
      std::unique_lock lock(mu_, std::defer_lock);
      if (hedgeable_) lock.lock();
      flight.decided = true;
      if (flight.lost || winner_ != nullptr) {
        // Another attempt's answer ends the call: this one's is recorded,
        // not returned, and counts in no budget.
        bool lost = flight.lost || cancelled_ == CancelReason::kNone;
        reason.kind = lost ? ReasonKind::kHedgeWon : StopReason();
      } else {
        Judge(outcome, decided, reason, wait, repeat);
        // Any outcome but another attempt or a wait for one ends the call.
        if (decided != DecisionKind::kAgain && reason.kind != ReasonKind::kHedgeInFlight) {
          winner_ = &flight;
        }
        again_decided_ = again_decided_ || decided == DecisionKind::kAgain;
        if (repeat) {
          // The repeat carries what the hedges in flight lack (a refreshed
          // credential): they lose to it now, so an answer of theirs to the
          // stale request cannot end the call (the one retry that starts
          // while others are in flight).
          for (InFlight& other : flights_) {
            other.lost = other.lost || (other.attempt != nullptr && !other.decided);
          }
        }
      }
      flight.repeat = repeat;
      flight.wait = wait;
    }
    outcome.record.decision = decided;
    outcome.record.reason = reason;
    options_.telemetry->resilience().RetryDecided(decided, reason);
  }

  void Ended(InFlight& flight, AttemptOutcome&& outcome) {
    if (!outcome.record.decision) Decide(flight, outcome);
    if (outcome.unprocessed || outcome.not_sent || outcome.rejected) {
      call_->unprocessed_attempts.fetch_add(1, std::memory_order_relaxed);
    }
    const retry::DecisionKind decided = *outcome.record.decision;
    const retry::ReasonKind why = outcome.record.reason.kind;
    if (options_.on_attempt) {
      outcome.record.method = request_->method;
      outcome.record.url = request_->url;
      options_.on_attempt(outcome.record);
    }
    // A first attempt that lost to its hedge took at least this long:
    // leaving it out would hide the tail the percentile is for. (A hedge
    // that lost says nothing: it started late.)
    bool lost_first = why == retry::ReasonKind::kHedgeWon && !flight.hedge;
    if (options_.hedging != nullptr && (outcome.result || lost_first)) {
      options_.hedging->Observe(outcome.record.duration);
    }

    std::vector<std::shared_ptr<Attempt>> losers;
    bool won = false;   // this attempt's outcome ends the call
    bool last = false;  // the last attempt out: the outcome kept ends the call
    bool at_once = false;
    bool cancelled = false;
    {
      std::lock_guard lock(mu_);
      // The slot is free from here (it may be taken again only under mu_).
      std::shared_ptr<Attempt> attempt = std::exchange(flight.attempt, nullptr);
      if (finished_) return;
      if (winner_ == &flight) {
        // The first answer that ends the call: the others are cancelled,
        // and the call ends once the last of them has.
        for (InFlight& other : flights_) {
          if (other.attempt == nullptr) continue;
          other.lost = !other.decided;
          if (other.lost) losers.push_back(other.attempt);
        }
        hedge_timer_.Cancel();
        won = true;
        // An attempt the breaker turned away unsent (a retry, or a hedge
        // an earlier answer waited for) after one the server took: that
        // one ends the call, as it does when the wait before a retry is cut
        // short. A call's rejection says nothing was sent, which is then
        // untrue. (After attempts that reached no server, or that the
        // server left unprocessed, the rejection is the truer answer; a
        // user's policy that threw as the rejection settled is the call's.)
        if (outcome.rejected && !outcome.thrown && last_ && !last_->rejected && !last_->not_sent &&
            !last_->unprocessed) {
          outcome = *std::exchange(last_, std::nullopt);
        }
      } else if (decided == retry::DecisionKind::kAgain) {
        // Nothing to wait out (Judge said so): a request a lost connection
        // took down with others, one the server left unprocessed the first
        // time, a middleware's repeat.
        at_once = flight.wait == Duration{0};
        repeat_next_ = flight.repeat;
        for (InFlight& other : flights_) {
          if (other.attempt != nullptr && other.lost) losers.push_back(other.attempt);
        }
        waiting_ = true;
        hedge_timer_.Cancel();
        // Left out, not failed: the next attempt keeps this one's turn.
        bool left_out = outcome.collateral || outcome.unprocessed;
        keep_place_ = left_out && attempt ? attempt->queue_place : 0;
        last_ = std::move(outcome);
        // A cancellation that came while this attempt was ending found no
        // attempt to cancel: the call ends now, not after the wait.
        cancelled = cancelled_ != CancelReason::kNone;
        if (!cancelled && !at_once) {
          // From the attempt's end, as Judge weighed the wait against the
          // deadline. The timer keeps this request alive while it waits.
          wait_timer_ =
              options_.clock->ScheduleAt(AddSaturated(last_->ended, flight.wait),
                                         [self = shared_from_this()] { self->StartAttempt(); });
        }
      } else {
        // Failed while another attempt is in flight (the call waits for
        // that one), or lost to one: what the call returns if the rest
        // are cut short, unless an answer already ends it.
        // A rejection (nothing sent) never replaces an answer kept before.
        bool keep = why == retry::ReasonKind::kHedgeInFlight && !ending_ &&
                    !(outcome.rejected && last_ && !last_->rejected);
        if (keep) last_ = std::move(outcome);
        last = ending_ && InFlightCount() == 0;
      }
    }
    for (const auto& loser : losers) loser->Cancel(CancelReason::kHedgeWon);
    if (won) return Finish(std::move(outcome));
    if (last) return FinishKept();
    if (cancelled) return FinishCancelled();
    if (at_once) StartAttempt();
  }

 private:
  // A new attempt of the request, in flight from now (null if no slot is
  // free); the caller begins it after letting go of the lock. Arms the
  // hedge timer when hedging is on.
  std::shared_ptr<Attempt> NewAttempt(bool hedge) {
    auto free = std::find_if(flights_.begin(), flights_.end(),
                             [](const InFlight& f) { return f.attempt == nullptr; });
    if (free == flights_.end()) return nullptr;
    InFlight& flight = *free;
    flight.hedge = hedge;
    flight.decided = flight.lost = flight.repeat = false;
    flight.wait = Duration{0};
    auto attempt = outbound::internal::MakeRecycled<Attempt>(attempts_path_, *options_.clock);
    waiting_ = false;
    if (!hedge) again_decided_ = false;
    attempt->request = request_;
    attempt->number = ++attempts_;
    attempt->resend_count = call_->attempts++;
    attempt->previous_attempts = attempt->resend_count - call_->unprocessed_attempts.load();
    attempt->repeat = std::exchange(repeat_next_, false);
    attempt->queue_place = std::exchange(keep_place_, 0);
    attempt->hedge = hedge;
    attempt->call = call_;
    // The request's own ownership, pointing at the slot.
    attempt->owner = std::shared_ptr<AttemptOwner>(shared_from_this(), &flight);
    attempt->started = options_.clock->Now();
    flight.attempt = attempt;
    if (hedgeable_ && Awaiting() < options_.hedging->settings().max_attempts_in_flight) {
      hedge_delay_ = options_.hedging->Delay();
      // Weak: the attempts in flight keep the request alive, not its timer.
      hedge_timer_ = options_.clock->ScheduleAfter(hedge_delay_, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->Hedge();
      });
    }
    return attempt;
  }

  // The hedge timer fired: one more attempt, if every rule allows it.
  void Hedge() {
    std::shared_ptr<Attempt> attempt;
    retry::DecisionKind decided;
    {
      std::lock_guard lock(mu_);
      if (finished_ || ending_ || winner_ != nullptr || waiting_ || again_decided_ ||
          cancelled_ != CancelReason::kNone) {
        return;
      }
      int awaiting = Awaiting();
      if (awaiting == 0 || awaiting >= options_.hedging->settings().max_attempts_in_flight) return;
      // Every slot may hold an attempt still ending (a cancelled loser):
      // no hedge then, and nothing of the budget spent on one.
      bool slot_free = std::any_of(flights_.begin(), flights_.end(),
                                   [](const InFlight& f) { return f.attempt == nullptr; });
      if (!slot_free) return;
      decided = HedgeDecision();
      if (decided == retry::DecisionKind::kAgain) attempt = NewAttempt(/*hedge=*/true);
    }
    // A hedge the rules refused is counted too, as what refused it.
    options_.telemetry->resilience().RetryDecided(decided,
                                                  retry::Reason{retry::ReasonKind::kHedge});
    if (attempt) attempt->Begin();
  }

  // Whether a hedge may start now (kAgain, its retry token spent), or which
  // rule refuses it: too little of the call's time left for it (kExpired),
  // MaxAttempts used (kExhausted), or the retry budget or the hedge share
  // spent (kThrottled). Under mu_.
  retry::DecisionKind HedgeDecision() {
    using retry::DecisionKind;
    if (call_->deadline() - options_.clock->Now() <= hedge_delay_) return DecisionKind::kExpired;
    const retry::Retrier& retrier = call_->policy->retrier;
    if (attempts_ >= retrier.policy().max_attempts) return DecisionKind::kExhausted;
    retry::Budget& budget = retrier.budget();
    if (!budget.AllowRetry() || !options_.hedging->TrySpend()) return DecisionKind::kThrottled;
    budget.OnRetryable();  // a hedge spends a retry token
    return DecisionKind::kAgain;
  }

  // Attempts in flight whose outcome is not decided yet, and may still
  // decide the call (not lost). Under mu_.
  int Awaiting() const {
    int n = 0;
    for (const InFlight& flight : flights_) {
      n += flight.attempt && !flight.decided && !flight.lost ? 1 : 0;
    }
    return n;
  }
  // Attempts in flight, decided or not. Under mu_.
  int InFlightCount() const {
    int n = 0;
    for (const InFlight& flight : flights_) n += flight.attempt ? 1 : 0;
    return n;
  }

  // What follows an attempt by the loop's rules and the client's own. Under
  // mu_ (retry::Loop is one call's, and its attempts may end together).
  void Judge(AttemptOutcome& outcome, retry::DecisionKind& decided, retry::Reason& reason,
             Duration& wait, bool& repeat) {
    using retry::DecisionKind;
    using retry::ReasonKind;
    // A buffered body can be sent again; a pipe's while it opens, until
    // the answer's body begins (and Rewind below says whether it still can).
    BodyPipe* pipe = request_->body_source.pipe.get();
    const bool replayable = request_->replayable || (pipe != nullptr && !outcome.body_streamed);
    const bool safe = idempotent_ && replayable;
    // Why a request that wanted another attempt may not have one.
    ReasonKind unsafe = replayable ? ReasonKind::kUnsafe : ReasonKind::kBodyNotReplayable;
    // Another attempt still awaits its answer (hedging only): a failure
    // that another attempt may mend waits for it rather than retrying.
    const bool others = hedgeable_ && Awaiting() > 0;
    const bool ends_call =
        outcome.thrown || (!outcome.rejected && outcome.classification &&
                           outcome.classification->retry != retry::Outcome::kRetry &&
                           !outcome.collateral && !outcome.unprocessed);
    if (outcome.result && options_.transparent != nullptr) options_.transparent->Earn();
    if (others && !ends_call) {
      // Counted as any attempt is (the budget, MaxAttempts), unless it is
      // one those leave out (a refused stream, a collateral loss); not
      // retried. Its Retry-After is the least wait of the retry that may
      // follow, whichever attempt's end decides it.
      if (outcome.classification && !outcome.thrown && !outcome.rejected && !outcome.collateral &&
          !outcome.unprocessed) {
        loop_.Count(outcome.classification->retry);
        if (outcome.classification->retry == retry::Outcome::kRetry) {
          held_until_ = std::max(held_until_,
                                 AddSaturated(outcome.ended, outcome.classification->retry_after));
        }
      }
      decided = DecisionKind::kStopped;
      reason.kind = ReasonKind::kHedgeInFlight;
      return;
    }
    if (outcome.collateral && !outcome.thrown) {
      // One never sent may go again whatever its method.
      bool may = safe || (outcome.not_sent && replayable);
      bool again = may && collateral_retries_ < kMaxCollateralRetries;
      collateral_retries_ += again ? 1 : 0;
      decided = again ? DecisionKind::kAgain : DecisionKind::kStopped;
      reason.kind = again ? ReasonKind::kTransparent : may ? ReasonKind::kExhausted : unsafe;
    } else if (outcome.unprocessed && outcome.connection_retired && !outcome.thrown && replayable &&
               retired_retries_ < kMaxRetiredRetries) {
      // Left out by a connection the server retired after answering
      // others: sent again at once on a new one, spending nothing.
      ++retired_retries_;
      call_->retired_resends.fetch_add(1, std::memory_order_relaxed);
      decided = DecisionKind::kAgain;
      reason.kind = ReasonKind::kTransparent;
    } else if (outcome.unprocessed && !outcome.thrown && replayable &&
               collateral_retries_ < kMaxCollateralRetries && options_.transparent != nullptr &&
               options_.transparent->TrySpend()) {
      // Not processed, while the dependency answers others: sent again
      // outside the budget and MaxAttempts (see TransparentRetries).
      ++collateral_retries_;
      decided = DecisionKind::kAgain;
      reason.kind = ReasonKind::kTransparent;
      wait = UnprocessedWait(call_->policy->retrier.policy().backoff.Wait(
          unprocessed_resends_, options_.random->Uniform()));
    } else if (!outcome.thrown && !outcome.rejected && outcome.classification) {
      const Classification& c = *outcome.classification;
      retry::Decision d =
          loop_.Done(c.retry, std::max(c.retry_after, HeldRetryAfter(outcome.ended)), outcome.ended,
                     options_.random->Uniform());
      decided = d.kind;
      reason.kind = d.reason;
      wait =
          outcome.unprocessed && d.kind == DecisionKind::kAgain ? UnprocessedWait(d.wait) : d.wait;
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
    repeat = outcome.repeat_once && !outcome.thrown && !outcome.rejected &&
             decided != DecisionKind::kAgain && !call_->repeated && replayable;
    if (repeat) {
      call_->repeated = true;
      decided = DecisionKind::kAgain;
      reason.kind = ReasonKind::kRepeat;
      wait = Duration{0};
    }
    // The next attempt takes the pipe's body from its start; more than
    // BodyPipe::kReplayBytes sent, the stream cannot go again.
    if (decided == DecisionKind::kAgain && pipe != nullptr && !PipeLink::Rewind(*pipe)) {
      decided = DecisionKind::kStopped;
      reason.kind = ReasonKind::kBodyNotReplayable;
      repeat = false;
    }
    // Whatever sends the next attempt (a transparent resend too) waits out
    // what a failure held for a hedge asked for, which is then honoured.
    if (decided == DecisionKind::kAgain) {
      if (!repeat) wait = std::max(wait, HeldRetryAfter(outcome.ended));
      held_until_ = TimePoint{};
    }
  }

  // What is left at `now` of the Retry-After a failure that waited for a
  // hedge in flight asked for (zero if none). Under mu_.
  Duration HeldRetryAfter(TimePoint now) const {
    if (held_until_ == TimePoint{}) return Duration::zero();
    return std::max(Duration::zero(), held_until_ - now);
  }

  // How long a request the server left unprocessed waits before it goes
  // again: nothing the first time (gRPC's A6: "immediately retry it
  // once"), then `backoff`. Sent at once again and again, a stream refused
  // at a server's limit meets the same limit. Under mu_, in Judge.
  Duration UnprocessedWait(Duration backoff) {
    return unprocessed_resends_++ == 0 ? Duration{0} : backoff;
  }

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

  // Ends the call with the outcome Finish kept, now that the last attempt
  // in flight has ended.
  void FinishKept() {
    std::optional<AttemptOutcome> kept;
    {
      std::lock_guard lock(mu_);
      kept = std::exchange(last_, std::nullopt);
    }
    if (kept) Finish(std::move(*kept));
  }

  // Ends the call with `outcome`, once no attempt is in flight: until the
  // last one ends (a cancelled hedge), it is kept for that one's Ended, so
  // no attempt outlives its call.
  void Finish(AttemptOutcome&& outcome) {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      if (InFlightCount() > 0) {
        if (!ending_) {
          last_ = std::move(outcome);
          ending_ = true;
        }
        return;
      }
      finished_ = true;
      last_.reset();
    }
    wait_timer_.Cancel();
    hedge_timer_.Cancel();
    CallOutcome call_outcome{std::move(outcome.result), std::move(outcome.thrown)};
    if (!call_outcome.result) call_outcome.result.error().set_attempts(call_->attempts_sent.load());
    call_->End(std::move(call_outcome));
  }

  const AttemptPath& attempts_path_;
  const RetryLoopOptions& options_;
  std::shared_ptr<CallState> call_;
  std::shared_ptr<const CallRequest> request_;
  const bool idempotent_;  // the method's rule; the body's is each attempt's
  // Safe to send twice at once: hedging is on, the method is idempotent,
  // the body buffered, and the answer's body not streamed to the caller.
  const bool hedgeable_;

  outbound::internal::Mutex mu_;
  retry::Loop loop_;  // guarded by mu_
  int attempts_ = 0;
  bool finished_ = false;
  bool waiting_ = false;
  // An attempt decided on another (kAgain), which has not started yet: no
  // hedge starts meanwhile (a repeat's would carry what it replaces).
  bool again_decided_ = false;
  CancelReason cancelled_ = CancelReason::kNone;
  int collateral_retries_ = 0;
  int retired_retries_ = 0;
  // Until when the failures that waited for a hedge in flight asked the
  // retry to wait (their Retry-After, from when each came): the next
  // attempt goes no earlier. Under mu_.
  TimePoint held_until_{};
  int unprocessed_resends_ = 0;   // of a request the server left unprocessed
  std::uint64_t keep_place_ = 0;  // the next attempt's queue place (Attempt::queue_place)
  bool repeat_next_ = false;
  // The attempts in flight, hedges included; each slot frees as its
  // attempt ends.
  InFlight only_;                            // the one slot without hedging
  std::unique_ptr<InFlight[]> hedge_slots_;  // kMaxInFlight with it
  std::span<InFlight> flights_{&only_, 1};
  // The attempt whose outcome ends the call (compared, never followed).
  const InFlight* winner_ = nullptr;
  // What the call returns if a wait is cut short; with ending_, what it
  // ends with once the attempts still in flight have ended.
  std::optional<AttemptOutcome> last_;
  bool ending_ = false;
  Timer wait_timer_;
  Timer hedge_timer_;
  Duration hedge_delay_{0};  // the delay the hedge timer was armed with
};

// The attempt's owner pointer holds the request while these run.
void InFlight::Decide(AttemptOutcome& outcome) { request->Decide(*this, outcome); }
void InFlight::Ended(AttemptOutcome&& outcome) { request->Ended(*this, std::move(outcome)); }

class RetryLoop final : public CallLayer {
 public:
  RetryLoop(const AttemptPath& attempts, RetryLoopOptions options)
      : attempts_(attempts), options_(std::move(options)) {}

  std::string_view name() const override { return "retry loop"; }

  void Send(CallState& call) override {
    auto retrying = outbound::internal::MakeRecycled<RetryingRequest>(attempts_, options_,
                                                                      call.shared_from_this());
    call.SetCancelTarget(retrying);
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
