// SPDX-License-Identifier: Apache-2.0
// How long the breaker stays open: an interval that starts short and grows
// while probes fail, and a busy breaker that probes once per
// `calls_per_probe` turned-away attempts. First the rule itself, then whole
// outages played on fake time against a steady caller.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <vector>

#include "outbound/circuit/breaker.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"

namespace outbound::circuit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using testing::FixedRandom;

// Few calls: only the interval decides when the breaker probes.
const Config kQuiet{.open_for = seconds(10), .initial_open_for = seconds(1)};

class OpenIntervalTest : public ::testing::Test {
 protected:
  Breaker::Observer Record() {
    return [this](const Transition& t) { transitions.push_back(t); };
  }
  void Fail(Breaker& breaker, int n) {
    for (int i = 0; i < n; ++i) {
      auto ticket = breaker.Allow(clock.Now());
      ASSERT_TRUE(ticket) << "rejected";
      ticket->Settle(Outcome::kFailure, clock.Now());
    }
  }
  // The intervals the breaker chose each time it opened.
  std::vector<Duration> OpenIntervals() const {
    std::vector<Duration> out;
    for (const Transition& t : transitions) {
      if (t.to == State::kOpen) out.push_back(t.open_for);
    }
    return out;
  }
  // Waits out the current open interval, then fails the probe.
  void FailNextProbe(Breaker& breaker) {
    ASSERT_FALSE(transitions.empty());
    clock.Advance(transitions.back().open_for);
    ASSERT_EQ(breaker.state(clock.Now()), State::kHalfOpen);
    Fail(breaker, 1);
  }

  testing::ManualClock clock;
  std::vector<Transition> transitions;
};

TEST_F(OpenIntervalTest, DoublesWhileProbesFailUpToOpenFor) {
  FixedRandom no_jitter(0);
  Breaker breaker(kQuiet, DefaultPolicy(), Record(), &no_jitter);
  Fail(breaker, 5);
  for (int i = 0; i < 5; ++i) FailNextProbe(breaker);
  EXPECT_EQ(OpenIntervals(), (std::vector<Duration>{seconds(1), seconds(2), seconds(4), seconds(8),
                                                    seconds(10), seconds(10)}));
}

TEST_F(OpenIntervalTest, JitterLengthensUpToHalfAgainButNeverPastOpenFor) {
  FixedRandom most(0.5);
  Breaker breaker(kQuiet, DefaultPolicy(), Record(), &most);
  Fail(breaker, 5);
  for (int i = 0; i < 4; ++i) FailNextProbe(breaker);
  // Nominal 1, 2, 4, 8, 10 s; a quarter more each (half the spread), and the
  // spread shrinks near the ceiling: 8 s may grow only to 10 s.
  EXPECT_EQ(OpenIntervals(), (std::vector<Duration>{milliseconds(1250), milliseconds(2500),
                                                    seconds(5), seconds(9), seconds(10)}));
}

TEST_F(OpenIntervalTest, ClosingStartsTheSequenceAgain) {
  FixedRandom no_jitter(0);
  Breaker breaker(kQuiet, DefaultPolicy(), Record(), &no_jitter);
  Fail(breaker, 5);
  FailNextProbe(breaker);
  FailNextProbe(breaker);  // now open for 4 s
  clock.Advance(seconds(4));
  for (int i = 0; i < 3; ++i) {
    auto probe = breaker.Allow(clock.Now());
    ASSERT_TRUE(probe);
    probe->Settle(Outcome::kSuccess, clock.Now());
  }
  ASSERT_EQ(breaker.state(clock.Now()), State::kClosed);
  Fail(breaker, 5);
  EXPECT_EQ(OpenIntervals().back(), seconds(1));
}

TEST_F(OpenIntervalTest, RetryAfterIsTheRestOfTheInterval) {
  FixedRandom no_jitter(0);
  Breaker breaker(kQuiet, DefaultPolicy(), Record(), &no_jitter);
  Fail(breaker, 5);
  FailNextProbe(breaker);  // open for 2 s
  clock.Advance(milliseconds(1500));
  auto rejected = breaker.Allow(clock.Now());
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().retry_after, milliseconds(500));
}

TEST_F(OpenIntervalTest, BusyBreakerProbesAfterCallsPerProbeRejections) {
  FixedRandom no_jitter(0);
  Breaker breaker(
      Config{.open_for = seconds(10), .initial_open_for = milliseconds(100), .calls_per_probe = 20},
      DefaultPolicy(), Record(), &no_jitter);
  Fail(breaker, 5);
  for (int i = 0; i < 4; ++i) FailNextProbe(breaker);
  ASSERT_EQ(OpenIntervals().back(), milliseconds(1600));
  // 20 rejections within initial_open_for do not end the interval early...
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(breaker.Allow(clock.Now()));
  clock.Advance(milliseconds(99));
  EXPECT_FALSE(breaker.Allow(clock.Now()));
  // ...but once initial_open_for has passed, they do, long before 1.6 s.
  clock.Advance(milliseconds(1));
  auto probe = breaker.Allow(clock.Now());
  ASSERT_TRUE(probe);
  EXPECT_TRUE(probe->probe());
  EXPECT_FALSE(breaker.Allow(clock.Now()));  // one probe at a time
}

TEST_F(OpenIntervalTest, InitialLongerThanOpenForIsTakenAsOpenFor) {
  Breaker breaker(Config{.open_for = seconds(2), .initial_open_for = seconds(5)}, DefaultPolicy(),
                  Record());
  Fail(breaker, 5);
  EXPECT_EQ(OpenIntervals(), std::vector<Duration>{seconds(2)});
}

// A caller that makes one attempt every `every` against a dependency whose
// health follows `healthy(t)` (t since the start), on fake time, in 1 ms
// steps. An attempt sent while the dependency is healthy succeeds after
// `latency`; one sent while it is sick fails after `fails_after` (a quick
// error, or a hang as the slow-call rule or an attempt timeout cuts it).
class Outage {
 public:
  Outage(Config config, std::function<bool(Duration)> healthy, Duration fails_after)
      : healthy_(std::move(healthy)),
        fails_after_(fails_after),
        breaker_(
            config, DefaultPolicy(), [this](const Transition& t) { transitions.push_back(t); },
            &random_) {}

  void Run(Duration length, Duration every) {
    const Duration step = milliseconds(1);
    Duration next_call{};
    for (Duration t{}; t < length; t += step) {
      for (auto it = in_flight_.begin(); it != in_flight_.end();) {
        if (it->ends > clock_.Now()) {
          ++it;
          continue;
        }
        if (it->ticket.probe()) --probes_in_flight_;
        it->ticket.Settle(it->outcome, clock_.Now());
        it = in_flight_.erase(it);
      }
      if (t >= next_call) {
        next_call += every;
        Call(t);
      }
      clock_.Advance(step);
    }
  }

  // When the breaker last closed after `t`, as time since the start.
  std::optional<Duration> ClosedAfter(Duration t) const {
    for (const Transition& tr : transitions) {
      if (tr.to == State::kClosed && tr.at - start_ >= t) return tr.at - start_;
    }
    return std::nullopt;
  }

  int calls = 0;
  int attempts = 0;  // admitted: what reached the dependency
  int max_probes_in_flight = 0;
  std::vector<Transition> transitions;
  TimePoint start() const { return start_; }

 private:
  struct InFlight {
    Ticket ticket;
    TimePoint ends;
    Outcome outcome;
  };

  void Call(Duration t) {
    ++calls;
    auto ticket = breaker_.Allow(clock_.Now());
    if (!ticket) return;
    ++attempts;
    if (ticket->probe()) {
      max_probes_in_flight = std::max(max_probes_in_flight, ++probes_in_flight_);
    }
    bool ok = healthy_(t);
    in_flight_.push_back({std::move(*ticket), clock_.Now() + (ok ? latency_ : fails_after_),
                          ok ? Outcome::kSuccess : Outcome::kFailure});
  }

  testing::ManualClock clock_;
  TimePoint start_ = clock_.Now();
  FixedRandom random_{0.999};  // the longest intervals: the slowest recovery
  std::function<bool(Duration)> healthy_;
  Duration latency_ = milliseconds(5);
  Duration fails_after_;
  Breaker breaker_;
  // After the breaker: tickets still in flight at the end settle into it
  // as they go.
  std::vector<InFlight> in_flight_;
  int probes_in_flight_ = 0;
};

// 100 attempts a second, the defaults.
const Duration kEvery = milliseconds(10);

TEST(OutageTest, AfterAHangOfAnyLengthTheBreakerClosesWithinOneSecondOfHealing) {
  for (Duration outage : {Duration(seconds(2)), Duration(seconds(12)), Duration(seconds(60)),
                          Duration(seconds(600))}) {
    SCOPED_TRACE(std::to_string(outage / seconds(1)) + " s outage");
    Duration heal = seconds(1) + outage;
    // A hang, cut after 250 ms by the slow-call rule.
    Outage run(
        Config{}, [&](Duration t) { return t < seconds(1) || t >= heal; }, milliseconds(250));
    run.Run(heal + seconds(3), kEvery);
    auto closed = run.ClosedAfter(heal);
    ASSERT_TRUE(closed) << "never closed";
    EXPECT_LE(*closed - heal, seconds(1));
  }
}

TEST(OutageTest, InALongOutageTheDependencyGetsAtMostOneAttemptInTwentyCalls) {
  for (Duration fails_after :
       {Duration(milliseconds(5)), Duration(milliseconds(250)), Duration(seconds(5))}) {
    SCOPED_TRACE(std::to_string(fails_after / milliseconds(1)) + " ms to fail");
    Outage run(
        Config{}, [](Duration) { return false; }, fails_after);
    run.Run(seconds(600), kEvery);
    EXPECT_LE(run.attempts * 20, run.calls) << run.attempts << " attempts, " << run.calls;
    EXPECT_EQ(run.max_probes_in_flight, 1);
  }
}

TEST(OutageTest, AQuietCallerPausesLongerAndLongerUpToOpenFor) {
  // One call a second: the interval, not the calls, decides.
  Outage run(
      Config{}, [](Duration) { return false; }, milliseconds(5));
  run.Run(seconds(600), seconds(1));
  Duration longest{};
  for (const Transition& t : run.transitions) longest = std::max(longest, t.open_for);
  EXPECT_EQ(longest, seconds(10));
  // Close to one attempt per OpenFor of calls.
  EXPECT_LE(run.attempts * 9, run.calls) << run.attempts << " attempts, " << run.calls;
}

TEST(OutageTest, AFlappingDependencyCannotMakeTheBreakerFlapFasterThanItsInterval) {
  // Healthy 1 s, down 1 s, for a minute; every failure quick.
  Config config;
  Outage run(
      config, [](Duration t) { return (t / seconds(1)) % 2 == 0; }, milliseconds(5));
  run.Run(seconds(60), kEvery);
  int opens = 0;
  std::optional<TimePoint> opened;
  for (const Transition& t : run.transitions) {
    if (t.to == State::kOpen) {
      ++opens;
      opened = t.at;
      EXPECT_GE(t.open_for, config.initial_open_for);
    }
    if (t.from == State::kOpen) {
      ASSERT_TRUE(opened);
      EXPECT_GE(t.at - *opened, config.initial_open_for);
    }
  }
  // It follows the dependency, opening in each of the 30 down seconds, and
  // no more often than one interval allows...
  EXPECT_GE(opens, 30);
  EXPECT_LE(opens, seconds(60) / config.initial_open_for);
  // ...and it is not what makes the dependency's load: fewer attempts than
  // calls by about the time it spends open.
  EXPECT_LE(run.attempts * 10, run.calls * 7);
}

}  // namespace
}  // namespace outbound::circuit
