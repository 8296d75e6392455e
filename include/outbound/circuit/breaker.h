// SPDX-License-Identifier: Apache-2.0
// outbound/circuit/breaker.h
//
// A circuit breaker for one dependency. It admits or rejects each attempt,
// counts how admitted attempts ended, and opens while the dependency keeps
// failing, as its Policy decides. It does no I/O and reads no clock: every
// call takes the current time, so tests drive it with any time they like.
//
// example: examples/headers/core.cc#breaker
//   circuit::Breaker breaker(circuit::Config{}, circuit::DefaultPolicy());
//   auto ticket = breaker.Allow(now);
//   if (!ticket) return Rejected(ticket.error().retry_after);
//   // ... make the attempt ...
//   ticket->Settle(circuit::Outcome::kFailure, now);
//
// States: closed admits everything and counts results over a sliding window
// of the last `window` results; when `Policy::trip` says so it opens. Open
// rejects everything for its open interval, then is half-open: it admits at
// most `probes` attempts at a time, and `Policy::probe` decides after each
// probe result whether to close, reopen, or keep probing. A probe that is not
// settled within `probe_timeout` counts as timed out and frees its slot.
//
// The open interval starts short and grows while probes keep failing: the
// first is `initial_open_for`, each reopen doubles it, `open_for` caps it,
// and closing starts the sequence again. Each interval is drawn at random
// between its nominal length and half as much again (never past
// `open_for`), so breakers that opened together do not probe together. A
// busy breaker probes sooner: once it has turned away `calls_per_probe`
// attempts, and at least `initial_open_for` after it opened. So a
// dependency that heals is found within about `calls_per_probe` calls however
// long it was down, while probes stay one in `calls_per_probe` calls of the
// dependency's load; a breaker with few calls waits out the growing interval.
//
// Results of tickets admitted in an earlier state are not counted: a slow
// success from before the breaker opened says nothing about now.
//
// An operator may take over (SetOverride): force the breaker open now (it
// then follows its rules: the open interval, probes), hold it closed
// (everything admitted and counted, never tripped), or isolate it (held
// open, no probes) until released. Polly's manual circuit control,
// Resilience4j's forced-open and disabled states.
//
// Thread-safe. Transitions reach the observer one at a time, in order,
// outside the breaker's lock, so an observer may call back into the breaker.
// A policy that throws leaves the breaker consistent (the result counted, the
// slot freed, the state unchanged) and the exception reaches the caller of
// Settle or Allow.
#ifndef OUTBOUND_CIRCUIT_BREAKER_H_
#define OUTBOUND_CIRCUIT_BREAKER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>

#include "outbound/clock.h"
#include "outbound/error.h"
#include "outbound/internal/mutex.h"
#include "outbound/random.h"

namespace outbound::circuit {

// The largest window and probe count a breaker accepts.
inline constexpr int kMaxCount = 10000;

enum class State { kClosed, kOpen, kHalfOpen };

// How an admitted attempt ended, as far as the dependency's health goes.
enum class Outcome {
  kSuccess,  // the dependency worked
  kFailure,  // the dependency failed
  kIgnored,  // says nothing about the dependency (the caller gave up)
};

// An operator's command to a breaker (Breaker::SetOverride).
enum class Override {
  kForceOpen,    // open now, as if tripped; its rules take it from there
  kForceClosed,  // closed, and held closed: admits every attempt until released
  kIsolate,      // open, and held open: no probes until released
  kRelease,      // ends a hold: the breaker follows its rules again
};

// What an operator holds a breaker in, if anything.
enum class Hold {
  kNone,
  kForcedClosed,  // by Override::kForceClosed
  kIsolated,      // by Override::kIsolate
};

std::string_view ToString(State state);
std::string_view ToString(Outcome outcome);
// "force_open", "force_closed", "isolate", "release"; "none", "forced-closed",
// "isolated".
std::string_view ToString(Override override);
std::string_view ToString(Hold hold);

struct Config {
  // Results the closed state's counts cover. Valid: 1 to kMaxCount.
  int window = 20;
  // Probes admitted at once while half-open. Valid: 1 to kMaxCount.
  int probes = 1;
  // The longest the breaker stays open before probing: the ceiling of the
  // growing open interval. Valid: positive.
  Duration open_for = std::chrono::seconds(10);
  // How long a probe may stay unsettled before its slot is freed.
  // Valid: positive.
  Duration probe_timeout = std::chrono::seconds(10);
  // The first open interval after closed; each reopen doubles it, up to
  // `open_for`. Valid: positive (one longer than `open_for` is taken as
  // `open_for`).
  Duration initial_open_for = std::chrono::milliseconds(500);
  // While open, the breaker probes once it has turned away this many
  // attempts (and `initial_open_for` has passed), however long its interval.
  // Valid: 1 to kMaxCount.
  int calls_per_probe = 50;
  // The slow-call rule: an attempt still waiting for its response's headers
  // this long after it was sent counts as a failure at that moment (its own
  // result, when it comes, is then not counted). The breaker reads no clock,
  // so the layer that makes the attempts applies it; the HTTP client does.
  // Zero turns it off (the default: how slow is too slow is the
  // dependency's own business). Valid: zero or positive.
  Duration slow_call = Duration::zero();
};

// Each check says what is wrong without naming the field.
[[nodiscard]] Result<void> CheckWindow(int window);
[[nodiscard]] Result<void> CheckProbes(int probes);
[[nodiscard]] Result<void> CheckOpenFor(Duration open_for);
[[nodiscard]] Result<void> CheckProbeTimeout(Duration probe_timeout);
[[nodiscard]] Result<void> CheckInitialOpenFor(Duration initial_open_for);
[[nodiscard]] Result<void> CheckCallsPerProbe(int calls_per_probe);
[[nodiscard]] Result<void> CheckSlowCall(Duration slow_call);

// The results of the current state. Closed: over the last `window` results.
// Half-open: since it went half-open. Open: those that opened it.
struct Counts {
  int successes = 0;
  int failures = 0;
  int consecutive_successes = 0;
  int consecutive_failures = 0;
  int timed_out = 0;  // half-open probes that were never settled in time
  friend bool operator==(const Counts&, const Counts&) = default;
};

// What Policy::probe says after a probe's result.
enum class ProbeVerdict { kKeepProbing, kClose, kReopen };

// When the breaker opens and closes: code, not settings.
struct Policy {
  // Closed: whether these counts open the breaker. Called after each result.
  std::function<bool(const Counts&)> trip;
  // Half-open: what to do after a probe's result or timeout.
  std::function<ProbeVerdict(const Counts&)> probe;
};

// Opens after 5 failures in a row, or when the window holds at least 20
// results and half or more failed (so a window under 20 trips only on the
// first rule). Half-open: reopens on a failed probe, closes after 3
// successful probes in a row.
Policy DefaultPolicy();

// A change of state, as the observer receives it.
struct Transition {
  State from;
  State to;
  Counts counts;  // the counts of the state left
  TimePoint at;
  // Entering open: how long this open interval lasts at most (it may end
  // sooner on `calls_per_probe`). Zero for the other transitions, and for
  // an isolated breaker's (it lasts until released).
  Duration open_for = Duration::zero();
  // An operator's override caused it (Breaker::SetOverride).
  bool forced = false;
};

// Why Allow said no.
struct Rejection {
  // How long until the breaker admits again at the latest: the rest of the
  // open interval (a busy breaker may probe sooner), or, half-open with every
  // probe slot taken, until the oldest probe times out.
  Duration retry_after;
};

class Breaker;

// An admitted attempt. Move-only. Settle it once with how the attempt ended;
// a ticket destroyed unsettled frees its slot and counts nothing.
class Ticket {
 public:
  Ticket(Ticket&& other) noexcept;
  Ticket& operator=(Ticket&& other) noexcept;
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;
  ~Ticket();

  // Counts the attempt's outcome. Later calls do nothing. May throw what the
  // breaker's policy throws; the ticket is settled all the same.
  void Settle(Outcome outcome, TimePoint now);

  bool settled() const { return breaker_ == nullptr; }
  // Whether this attempt is a half-open probe.
  bool probe() const { return slot_ >= 0; }

 private:
  friend class Breaker;
  Ticket(Breaker* breaker, std::uint64_t generation, int slot, std::uint64_t probe_id)
      : breaker_(breaker), generation_(generation), slot_(slot), probe_id_(probe_id) {}

  Breaker* breaker_;  // null once settled or moved from
  std::uint64_t generation_;
  int slot_;  // probe slot, or -1 for an attempt admitted while closed
  std::uint64_t probe_id_;
};

class Breaker {
 public:
  using Observer = std::function<void(const Transition&)>;

  // `config` must pass the checks and `policy` have both functions set;
  // out-of-range counts are clamped. `random` draws the open intervals'
  // jitter (null: DefaultRandom()) and must outlive the breaker. The breaker
  // starts closed.
  Breaker(Config config, Policy policy, Observer observer = nullptr, Random* random = nullptr);
  Breaker(const Breaker&) = delete;
  Breaker& operator=(const Breaker&) = delete;

  // Admits an attempt, or rejects it while open or while every probe slot
  // is taken. Every ticket must be settled or destroyed before the breaker.
  [[nodiscard]] tl::expected<Ticket, Rejection> Allow(TimePoint now);

  // The state at `now`: half-open as soon as the open interval has passed,
  // with no attempt made.
  State state(TimePoint now);

  // The counts of the state at `now`.
  Counts counts(TimePoint now);

  // An operator's override, at `now`:
  //   kForceOpen    enters open (from any state, ending any hold) with the
  //                 next open interval; probes and closing follow as usual.
  //   kForceClosed  enters closed if it is not, and holds it there: every
  //                 attempt is admitted and its result counted, and the
  //                 trip rule is not asked.
  //   kIsolate      enters open if it is not, and holds it there: every
  //                 attempt is rejected (retry_after: open_for, a hint, for
  //                 the hold has no end), and no probe is made.
  //   kRelease      ends a hold. A forced-closed breaker stays closed and its
  //                 trip rule is asked at the next result; an isolated one
  //                 goes half-open, so probes find out how the dependency is.
  // A change of state reaches the observer as a Transition with `forced`.
  // Returns the hold before the override. For telemetry, logs and counts,
  // call the client's method instead (http::Client::OverrideBreaker).
  Hold SetOverride(Override override, TimePoint now);

  // The operator's hold now.
  Hold hold();

  const Config& config() const { return config_; }

 private:
  friend class Ticket;
  struct ProbeSlot {
    bool busy = false;
    std::uint64_t id = 0;
    TimePoint started;
  };

  void Settle(const Ticket& ticket, Outcome outcome, TimePoint now);
  void Release(const Ticket& ticket);

  // With mu_ held: applies what time alone changes (open -> half-open,
  // probes timing out).
  void Advance(TimePoint now);
  // Runs `step` under mu_ after Advance(now), then delivers transitions.
  template <typename Step>
  auto Locked(TimePoint now, Step step);
  void ApplyProbeVerdict(TimePoint now);
  void RecordClosed(Outcome outcome);
  void CountResult(Outcome outcome);
  void Enter(State to, TimePoint now, bool forced = false);
  // With mu_ held: the length of the next open interval, jitter drawn.
  Duration NextOpenInterval();
  bool SameState(const Ticket& ticket) const;
  // Hands queued transitions to the observer, outside mu_.
  void Deliver();

  const Config config_;
  const Policy policy_;
  const Observer observer_;
  Random* const random_;

  outbound::internal::Mutex mu_;
  State state_ = State::kClosed;
  Hold hold_ = Hold::kNone;
  std::uint64_t generation_ = 0;
  // generation_ while closed, else kNotClosed; written with state_. Allow
  // and state read it without mu_: closed, the usual case, nothing moves
  // with time, so a closed breaker admits at once.
  static constexpr std::uint64_t kNotClosed = ~std::uint64_t{0};
  std::atomic<std::uint64_t> closed_generation_{0};
  TimePoint opened_at_;
  Duration open_interval_{};  // of the current (or last) open state
  int opens_in_a_row_ = 0;    // opens since the breaker last closed
  int rejected_ = 0;          // attempts turned away since it opened
  Counts counts_;
  std::vector<Outcome> window_;  // ring of the closed state's last results
  int window_next_ = 0;
  int window_size_ = 0;
  std::vector<ProbeSlot> slots_;
  std::uint64_t next_probe_id_ = 1;
  std::deque<Transition> pending_;
  bool delivering_ = false;
};

}  // namespace outbound::circuit

#endif  // OUTBOUND_CIRCUIT_BREAKER_H_
