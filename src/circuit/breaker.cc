// SPDX-License-Identifier: Apache-2.0
#include "outbound/circuit/breaker.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace outbound::circuit {
namespace {

// Time from `since` to `now`, never negative: a caller's `now`, read
// before the lock, may precede what another caller recorded under it.
Duration Elapsed(TimePoint since, TimePoint now) { return std::max(Duration::zero(), now - since); }

Result<void> CheckCount(int n) {
  if (n < 1 || n > kMaxCount) {
    return Fail(ErrorKind::kInvalidSettings,
                "must be from 1 to " + std::to_string(kMaxCount) + ", not " + std::to_string(n));
  }
  return {};
}

Result<void> CheckPositive(Duration d) {
  if (d <= Duration::zero()) return Fail(ErrorKind::kInvalidSettings, "must be positive");
  return {};
}

}  // namespace

std::string_view ToString(State state) {
  switch (state) {
    case State::kClosed:
      return "closed";
    case State::kOpen:
      return "open";
    case State::kHalfOpen:
      return "half-open";
  }
  return "unknown";
}

std::string_view ToString(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSuccess:
      return "success";
    case Outcome::kFailure:
      return "failure";
    case Outcome::kIgnored:
      return "ignored";
  }
  return "unknown";
}

std::string_view ToString(Override override) {
  switch (override) {
    case Override::kForceOpen:
      return "force_open";
    case Override::kForceClosed:
      return "force_closed";
    case Override::kIsolate:
      return "isolate";
    case Override::kRelease:
      return "release";
  }
  return "unknown";
}

std::string_view ToString(Hold hold) {
  switch (hold) {
    case Hold::kNone:
      return "none";
    case Hold::kForcedClosed:
      return "forced-closed";
    case Hold::kIsolated:
      return "isolated";
  }
  return "unknown";
}

Result<void> CheckWindow(int window) { return CheckCount(window); }
Result<void> CheckProbes(int probes) { return CheckCount(probes); }
Result<void> CheckOpenFor(Duration open_for) { return CheckPositive(open_for); }
Result<void> CheckProbeTimeout(Duration probe_timeout) { return CheckPositive(probe_timeout); }
Result<void> CheckInitialOpenFor(Duration initial_open_for) {
  return CheckPositive(initial_open_for);
}
Result<void> CheckCallsPerProbe(int calls_per_probe) { return CheckCount(calls_per_probe); }
Result<void> CheckSlowCall(Duration slow_call) {
  if (slow_call < Duration::zero()) {
    return Fail(ErrorKind::kInvalidSettings, "must be zero (off) or positive");
  }
  return {};
}

Policy DefaultPolicy() {
  return Policy{
      .trip =
          [](const Counts& c) {
            int results = c.successes + c.failures;
            return c.consecutive_failures >= 5 || (results >= 20 && c.failures * 2 >= results);
          },
      .probe =
          [](const Counts& c) {
            if (c.failures > 0) return ProbeVerdict::kReopen;
            if (c.consecutive_successes >= 3) return ProbeVerdict::kClose;
            return ProbeVerdict::kKeepProbing;
          },
  };
}

// --- Ticket ---

Ticket::Ticket(Ticket&& other) noexcept
    : breaker_(std::exchange(other.breaker_, nullptr)),
      generation_(other.generation_),
      slot_(other.slot_),
      probe_id_(other.probe_id_) {}

Ticket& Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (breaker_ != nullptr) breaker_->Release(*this);
    breaker_ = std::exchange(other.breaker_, nullptr);
    generation_ = other.generation_;
    slot_ = other.slot_;
    probe_id_ = other.probe_id_;
  }
  return *this;
}

Ticket::~Ticket() {
  if (breaker_ != nullptr) breaker_->Release(*this);
}

void Ticket::Settle(Outcome outcome, TimePoint now) {
  Breaker* breaker = std::exchange(breaker_, nullptr);
  if (breaker != nullptr) breaker->Settle(*this, outcome, now);
}

// --- Breaker ---

Breaker::Breaker(Config config, Policy policy, Observer observer, Random* random)
    : config_{.window = std::clamp(config.window, 1, kMaxCount),
              .probes = std::clamp(config.probes, 1, kMaxCount),
              .open_for = config.open_for,
              .probe_timeout = config.probe_timeout,
              .initial_open_for = std::min(config.initial_open_for, config.open_for),
              .calls_per_probe = std::clamp(config.calls_per_probe, 1, kMaxCount),
              .slow_call = config.slow_call},
      policy_(std::move(policy)),
      observer_(std::move(observer)),
      random_(random != nullptr ? random : &DefaultRandom()),
      window_(static_cast<std::size_t>(config_.window), Outcome::kIgnored),
      slots_(static_cast<std::size_t>(config_.probes)) {}

template <typename Step>
auto Breaker::Locked(TimePoint now, Step step) {
  std::optional<decltype(step())> result;
  bool queued = false;
  {
    std::unique_lock lock(mu_);
    try {
      Advance(now);
      result.emplace(step());
    } catch (...) {
      // The policy threw: what it did to the state stands, and the
      // transitions queued before it still reach the observer.
      lock.unlock();
      Deliver();
      throw;
    }
    queued = !pending_.empty();
  }
  if (queued) Deliver();
  return std::move(*result);
}

tl::expected<Ticket, Rejection> Breaker::Allow(TimePoint now) {
  // As if admitted under mu_ at this load: a ticket of a generation left
  // meanwhile counts for nothing (SameState).
  if (std::uint64_t closed = closed_generation_.load(std::memory_order_acquire);
      closed != kNotClosed) {
    return Ticket(this, closed, -1, 0);
  }
  return Locked(now, [&]() -> tl::expected<Ticket, Rejection> {
    switch (state_) {
      case State::kClosed:
        return Ticket(this, generation_, -1, 0);
      case State::kOpen:
        if (hold_ == Hold::kIsolated) return tl::unexpected(Rejection{config_.open_for});
        ++rejected_;
        return tl::unexpected(Rejection{open_interval_ - Elapsed(opened_at_, now)});
      case State::kHalfOpen:
        break;
    }
    auto free =
        std::find_if(slots_.begin(), slots_.end(), [](const ProbeSlot& s) { return !s.busy; });
    if (free != slots_.end()) {
      *free = ProbeSlot{true, next_probe_id_++, now};
      return Ticket(this, generation_, static_cast<int>(free - slots_.begin()), free->id);
    }
    TimePoint first_free = slots_.front().started;
    for (const ProbeSlot& s : slots_) first_free = std::min(first_free, s.started);
    return tl::unexpected(Rejection{config_.probe_timeout - Elapsed(first_free, now)});
  });
}

State Breaker::state(TimePoint now) {
  if (closed_generation_.load(std::memory_order_acquire) != kNotClosed) return State::kClosed;
  return Locked(now, [&] { return state_; });
}

Counts Breaker::counts(TimePoint now) {
  return Locked(now, [&] { return counts_; });
}

Hold Breaker::SetOverride(Override override, TimePoint now) {
  return Locked(now, [&] {
    Hold before = hold_;
    switch (override) {
      case Override::kForceOpen:
        hold_ = Hold::kNone;
        if (state_ != State::kOpen) {
          Enter(State::kOpen, now, /*forced=*/true);
        } else {
          // Already open (perhaps isolated): a new interval from now, with
          // no change of state to tell.
          opened_at_ = now;
          open_interval_ = NextOpenInterval();
          rejected_ = 0;
        }
        break;
      case Override::kForceClosed:
        hold_ = Hold::kForcedClosed;
        if (state_ != State::kClosed) Enter(State::kClosed, now, /*forced=*/true);
        break;
      case Override::kIsolate:
        hold_ = Hold::kIsolated;
        if (state_ != State::kOpen) Enter(State::kOpen, now, /*forced=*/true);
        break;
      case Override::kRelease:
        hold_ = Hold::kNone;
        if (before == Hold::kIsolated) Enter(State::kHalfOpen, now, /*forced=*/true);
        break;
    }
    return before;
  });
}

Hold Breaker::hold() {
  std::lock_guard lock(mu_);
  return hold_;
}

bool Breaker::SameState(const Ticket& ticket) const {
  if (ticket.generation_ != generation_) return false;
  if (ticket.slot_ < 0) return true;
  const ProbeSlot& slot = slots_[static_cast<std::size_t>(ticket.slot_)];
  return slot.busy && slot.id == ticket.probe_id_;
}

void Breaker::Settle(const Ticket& ticket, Outcome outcome, TimePoint now) {
  Locked(now, [&] {
    if (!SameState(ticket)) return 0;
    if (ticket.slot_ < 0) {
      if (outcome == Outcome::kIgnored) return 0;
      RecordClosed(outcome);
      if (hold_ != Hold::kForcedClosed && policy_.trip(Counts(counts_))) {
        Enter(State::kOpen, now);
      }
      return 0;
    }
    slots_[static_cast<std::size_t>(ticket.slot_)].busy = false;
    if (outcome == Outcome::kIgnored) return 0;
    CountResult(outcome);
    ApplyProbeVerdict(now);
    return 0;
  });
}

void Breaker::Release(const Ticket& ticket) {
  std::lock_guard lock(mu_);
  if (ticket.slot_ >= 0 && SameState(ticket)) {
    slots_[static_cast<std::size_t>(ticket.slot_)].busy = false;
  }
}

void Breaker::Advance(TimePoint now) {
  if (hold_ == Hold::kIsolated) return;  // no probe until released
  if (state_ == State::kOpen &&
      (now - opened_at_ >= open_interval_ ||
       (rejected_ >= config_.calls_per_probe && now - opened_at_ >= config_.initial_open_for))) {
    Enter(State::kHalfOpen, now);
  }
  if (state_ != State::kHalfOpen) return;
  for (ProbeSlot& slot : slots_) {
    if (!slot.busy || now - slot.started < config_.probe_timeout) continue;
    slot.busy = false;
    ++counts_.timed_out;
    ApplyProbeVerdict(now);
    if (state_ != State::kHalfOpen) return;
  }
}

void Breaker::ApplyProbeVerdict(TimePoint now) {
  ProbeVerdict verdict = policy_.probe(Counts(counts_));
  if (verdict == ProbeVerdict::kClose) Enter(State::kClosed, now);
  if (verdict == ProbeVerdict::kReopen) Enter(State::kOpen, now);
}

void Breaker::RecordClosed(Outcome outcome) {
  if (window_size_ == config_.window) {
    Outcome oldest = window_[static_cast<std::size_t>(window_next_)];
    (oldest == Outcome::kSuccess ? counts_.successes : counts_.failures) -= 1;
  } else {
    ++window_size_;
  }
  window_[static_cast<std::size_t>(window_next_)] = outcome;
  window_next_ = (window_next_ + 1) % config_.window;
  CountResult(outcome);
}

void Breaker::CountResult(Outcome outcome) {
  if (outcome == Outcome::kSuccess) {
    ++counts_.successes;
    ++counts_.consecutive_successes;
    counts_.consecutive_failures = 0;
  } else if (outcome == Outcome::kFailure) {
    ++counts_.failures;
    ++counts_.consecutive_failures;
    counts_.consecutive_successes = 0;
  }
}

Duration Breaker::NextOpenInterval() {
  // Doubling from initial_open_for, capped at open_for: a doubling past
  // half the cap is the cap, so nothing overflows.
  Duration nominal = config_.initial_open_for;
  for (int i = 1; i < opens_in_a_row_ && nominal < config_.open_for; ++i) {
    nominal = nominal > config_.open_for / 2 ? config_.open_for : nominal * 2;
  }
  // Jitter upwards only, so the interval is never shorter than its nominal
  // length: that length is the least time between two probing rounds.
  Duration spread = std::min(nominal / 2, config_.open_for - nominal);
  double u = std::clamp(random_->Uniform(), 0.0, 1.0);
  return nominal + std::chrono::duration_cast<Duration>(spread * u);
}

void Breaker::Enter(State to, TimePoint now, bool forced) {
  Duration interval = Duration::zero();
  if (to == State::kOpen) {
    opens_in_a_row_ = std::min(opens_in_a_row_ + 1, 64);  // doubling hits any cap by then
    interval = NextOpenInterval();
  }
  if (observer_) {
    Duration told = hold_ == Hold::kIsolated ? Duration::zero() : interval;
    pending_.push_back(Transition{state_, to, counts_, now, told, forced});
  }
  state_ = to;
  ++generation_;  // tickets of the state left no longer count
  closed_generation_.store(to == State::kClosed ? generation_ : kNotClosed,
                           std::memory_order_release);
  if (to == State::kOpen) {
    opened_at_ = now;
    open_interval_ = interval;
    rejected_ = 0;
    return;  // the open state keeps the counts that opened it
  }
  if (to == State::kClosed) opens_in_a_row_ = 0;
  counts_ = Counts{};
  window_next_ = 0;
  window_size_ = 0;
  for (ProbeSlot& slot : slots_) slot.busy = false;
}

void Breaker::Deliver() {
  if (!observer_) return;
  std::unique_lock lock(mu_);
  if (delivering_) return;  // the delivering thread will pick up what we queued
  delivering_ = true;
  while (!pending_.empty()) {
    Transition transition = pending_.front();
    pending_.pop_front();
    lock.unlock();
    try {
      observer_(transition);
    } catch (...) {
      lock.lock();
      delivering_ = false;
      throw;
    }
    lock.lock();
  }
  delivering_ = false;
}

}  // namespace outbound::circuit
