// SPDX-License-Identifier: Apache-2.0
#include "outbound/circuit/breaker.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "outbound/testing/manual_clock.h"

namespace outbound::circuit {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

// One open interval every time: the first is already the ceiling.
const Config kSteady{.initial_open_for = seconds(10)};

class BreakerTest : public ::testing::Test {
 protected:
  // Makes one attempt that ends with `outcome`.
  void Attempt(Breaker& breaker, Outcome outcome) {
    auto ticket = breaker.Allow(clock.Now());
    ASSERT_TRUE(ticket) << "rejected";
    ticket->Settle(outcome, clock.Now());
  }
  void Fail(Breaker& breaker, int n) {
    for (int i = 0; i < n; ++i) Attempt(breaker, Outcome::kFailure);
  }
  void Succeed(Breaker& breaker, int n) {
    for (int i = 0; i < n; ++i) Attempt(breaker, Outcome::kSuccess);
  }
  Breaker::Observer Record() {
    return [this](const Transition& t) { transitions.push_back(t); };
  }

  testing::ManualClock clock;
  std::vector<Transition> transitions;
};

TEST(BreakerChecksTest, AcceptExactlyTheDocumentedRanges) {
  EXPECT_FALSE(CheckWindow(0));
  EXPECT_TRUE(CheckWindow(1));
  EXPECT_TRUE(CheckWindow(kMaxCount));
  EXPECT_FALSE(CheckWindow(kMaxCount + 1));
  EXPECT_FALSE(CheckProbes(0));
  EXPECT_TRUE(CheckProbes(1));
  EXPECT_FALSE(CheckOpenFor(Duration::zero()));
  EXPECT_TRUE(CheckOpenFor(seconds(1)));
  EXPECT_FALSE(CheckProbeTimeout(-seconds(1)));
  EXPECT_FALSE(CheckInitialOpenFor(Duration::zero()));
  EXPECT_TRUE(CheckInitialOpenFor(milliseconds(1)));
  EXPECT_FALSE(CheckCallsPerProbe(0));
  EXPECT_TRUE(CheckCallsPerProbe(1));
  EXPECT_TRUE(CheckCallsPerProbe(kMaxCount));
  EXPECT_FALSE(CheckCallsPerProbe(kMaxCount + 1));
  EXPECT_TRUE(CheckSlowCall(Duration::zero()));  // off
  EXPECT_TRUE(CheckSlowCall(milliseconds(250)));
  EXPECT_FALSE(CheckSlowCall(-milliseconds(1)));
  EXPECT_EQ(CheckSlowCall(-milliseconds(1)).error().message(), "must be zero (off) or positive");
  EXPECT_EQ(CheckWindow(0).error().message(), "must be from 1 to 10000, not 0");
}

TEST_F(BreakerTest, TripsAfterFiveConsecutiveFailures) {
  Breaker breaker(Config{}, DefaultPolicy(), Record());
  Fail(breaker, 4);
  EXPECT_EQ(breaker.state(clock.Now()), State::kClosed);
  Fail(breaker, 1);
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
  ASSERT_EQ(transitions.size(), 1u);
  EXPECT_EQ(transitions[0].from, State::kClosed);
  EXPECT_EQ(transitions[0].to, State::kOpen);
  EXPECT_EQ(transitions[0].counts.consecutive_failures, 5);
  EXPECT_EQ(transitions[0].counts.failures, 5);
}

TEST_F(BreakerTest, TripsWhenHalfOfAFullWindowFailed) {
  Breaker breaker(Config{}, DefaultPolicy());
  for (int i = 0; i < 9; ++i) {  // alternate: never 5 in a row
    Fail(breaker, 1);
    Succeed(breaker, 1);
  }
  Succeed(breaker, 1);  // 19 results, 9 failed
  Fail(breaker, 1);     // 20 results, 10 failed: half
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
}

TEST_F(BreakerTest, UnderTwentyResultsOnlyConsecutiveFailuresTrip) {
  Breaker breaker(Config{.window = 10}, DefaultPolicy());
  for (int i = 0; i < 50; ++i) {  // 4 failures, 1 success, forever: 80 % failed
    Fail(breaker, 4);
    Succeed(breaker, 1);
  }
  EXPECT_EQ(breaker.state(clock.Now()), State::kClosed);
  Fail(breaker, 5);
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
}

TEST_F(BreakerTest, WindowSlides) {
  Breaker breaker(Config{.window = 20}, DefaultPolicy());
  Fail(breaker, 4);
  Succeed(breaker, 1);
  Fail(breaker, 4);
  Succeed(breaker, 1);  // 10 results: 8 failed
  Counts c = breaker.counts(clock.Now());
  EXPECT_EQ(c.failures, 8);
  EXPECT_EQ(c.successes, 2);
  Succeed(breaker, 20);  // the window now holds only these
  c = breaker.counts(clock.Now());
  EXPECT_EQ(c.failures, 0);
  EXPECT_EQ(c.successes, 20);
  EXPECT_EQ(c.consecutive_successes, 21);
}

TEST_F(BreakerTest, OpenRejectsWithShrinkingRetryAfter) {
  Breaker breaker(kSteady, DefaultPolicy());
  Fail(breaker, 5);
  auto first = breaker.Allow(clock.Now());
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().retry_after, seconds(10));
  clock.Advance(seconds(4));
  auto later = breaker.Allow(clock.Now());
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().retry_after, seconds(6));
}

// An OpenFor as long as Duration::max() keeps the breaker open: the
// interval added to when it opened wrapped, and it probed at once.
TEST_F(BreakerTest, AnOpenForOfDurationMaxStaysOpen) {
  Breaker breaker(Config{.open_for = Duration::max(), .initial_open_for = Duration::max()},
                  DefaultPolicy());
  Fail(breaker, 5);
  clock.Advance(hours(24 * 365));
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
  auto rejected = breaker.Allow(clock.Now());
  ASSERT_FALSE(rejected);
  EXPECT_GT(rejected.error().retry_after, hours(24 * 365 * 100));
  // A caller's "now", read before another's opening (as threads may):
  // the wait is the whole interval, not a sum that wrapped.
  Breaker other(Config{.open_for = Duration::max(), .initial_open_for = Duration::max()},
                DefaultPolicy());
  Fail(other, 5);
  auto early = other.Allow(clock.Now() - seconds(1));
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().retry_after, Duration::max());
}

TEST_F(BreakerTest, StateShowsHalfOpenAsSoonAsOpenForPassesWithNoCall) {
  Breaker breaker(kSteady, DefaultPolicy(), Record());
  Fail(breaker, 5);
  clock.Advance(seconds(10) - Duration(1));
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
  clock.Advance(Duration(1));
  EXPECT_EQ(breaker.state(clock.Now()), State::kHalfOpen);
  ASSERT_EQ(transitions.size(), 2u);
  EXPECT_EQ(transitions[1].from, State::kOpen);
  EXPECT_EQ(transitions[1].to, State::kHalfOpen);
}

TEST_F(BreakerTest, HalfOpenAdmitsAtMostProbesAtOnce) {
  Breaker breaker(Config{.probes = 2}, DefaultPolicy());
  Fail(breaker, 5);
  clock.Advance(seconds(10));
  auto a = breaker.Allow(clock.Now());
  auto b = breaker.Allow(clock.Now());
  auto c = breaker.Allow(clock.Now());
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_TRUE(a->probe());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().retry_after, seconds(10));  // until the oldest probe times out
  a->Settle(Outcome::kSuccess, clock.Now());
  EXPECT_TRUE(breaker.Allow(clock.Now()));  // a's slot is free again
}

TEST_F(BreakerTest, FailedProbeReopens) {
  Breaker breaker(kSteady, DefaultPolicy(), Record());
  Fail(breaker, 5);
  clock.Advance(seconds(10));
  Succeed(breaker, 2);
  Fail(breaker, 1);
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
  ASSERT_EQ(transitions.size(), 3u);
  EXPECT_EQ(transitions[2].from, State::kHalfOpen);
  EXPECT_EQ(transitions[2].counts.successes, 2);
  EXPECT_EQ(transitions[2].counts.failures, 1);
  auto rejected = breaker.Allow(clock.Now());
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().retry_after, seconds(10));  // a full OpenFor again
}

TEST_F(BreakerTest, ClosesAfterThreeSuccessfulProbes) {
  Breaker breaker(Config{}, DefaultPolicy(), Record());
  Fail(breaker, 5);
  clock.Advance(seconds(10));
  Succeed(breaker, 2);
  EXPECT_EQ(breaker.state(clock.Now()), State::kHalfOpen);
  Succeed(breaker, 1);
  EXPECT_EQ(breaker.state(clock.Now()), State::kClosed);
  ASSERT_EQ(transitions.size(), 3u);
  EXPECT_EQ(transitions[2].to, State::kClosed);
  EXPECT_EQ(transitions[2].counts.consecutive_successes, 3);
  EXPECT_EQ(breaker.counts(clock.Now()), Counts{});  // closed starts afresh
}

TEST_F(BreakerTest, IgnoredOutcomesCountNothing) {
  Breaker breaker(Config{}, DefaultPolicy());
  for (int i = 0; i < 100; ++i) Attempt(breaker, Outcome::kIgnored);
  EXPECT_EQ(breaker.counts(clock.Now()), Counts{});
}

TEST_F(BreakerTest, UnsettledTicketReleasesItsProbeSlot) {
  Breaker breaker(Config{}, DefaultPolicy());
  Fail(breaker, 5);
  clock.Advance(seconds(10));
  {
    auto probe = breaker.Allow(clock.Now());
    ASSERT_TRUE(probe);
    EXPECT_FALSE(breaker.Allow(clock.Now()));
  }  // destroyed unsettled
  EXPECT_TRUE(breaker.Allow(clock.Now()));
  EXPECT_EQ(breaker.counts(clock.Now()), Counts{});
}

TEST_F(BreakerTest, ProbeUnsettledPastProbeTimeoutTimesOutAndFreesItsSlot) {
  Breaker breaker(Config{.probe_timeout = seconds(3)}, DefaultPolicy());
  Fail(breaker, 5);
  clock.Advance(seconds(10));
  auto hung = breaker.Allow(clock.Now());
  ASSERT_TRUE(hung);
  clock.Advance(seconds(2));
  auto refused = breaker.Allow(clock.Now());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().retry_after, seconds(1));
  clock.Advance(seconds(1));
  auto next = breaker.Allow(clock.Now());
  ASSERT_TRUE(next);
  EXPECT_EQ(breaker.counts(clock.Now()).timed_out, 1);
  // The late probe's result no longer counts.
  hung->Settle(Outcome::kFailure, clock.Now());
  EXPECT_EQ(breaker.state(clock.Now()), State::kHalfOpen);
  EXPECT_EQ(breaker.counts(clock.Now()).failures, 0);
}

TEST_F(BreakerTest, ResultsFromAnEarlierStateAreNotCounted) {
  Breaker breaker(Config{}, DefaultPolicy());
  auto slow = breaker.Allow(clock.Now());
  ASSERT_TRUE(slow);
  Fail(breaker, 5);
  clock.Advance(seconds(10));
  Succeed(breaker, 3);  // closed again
  slow->Settle(Outcome::kFailure, clock.Now());
  EXPECT_EQ(breaker.counts(clock.Now()).failures, 0);
}

TEST_F(BreakerTest, TicketSettlesOnce) {
  Breaker breaker(Config{}, DefaultPolicy());
  auto ticket = breaker.Allow(clock.Now());
  ASSERT_TRUE(ticket);
  ticket->Settle(Outcome::kFailure, clock.Now());
  ticket->Settle(Outcome::kFailure, clock.Now());
  EXPECT_TRUE(ticket->settled());
  EXPECT_EQ(breaker.counts(clock.Now()).failures, 1);
}

TEST_F(BreakerTest, ObserverMayCallBackIntoTheBreakerWithoutDeadlock) {
  std::vector<State> seen_inside;
  Breaker* self = nullptr;
  Breaker breaker(Config{}, DefaultPolicy(), [&](const Transition& t) {
    transitions.push_back(t);
    seen_inside.push_back(self->state(t.at));
    (void)self->Allow(t.at);
  });
  self = &breaker;
  Fail(breaker, 5);
  clock.Advance(seconds(10));
  Succeed(breaker, 3);
  ASSERT_EQ(transitions.size(), 3u);
  EXPECT_EQ(transitions[0].to, State::kOpen);
  EXPECT_EQ(transitions[1].to, State::kHalfOpen);
  EXPECT_EQ(transitions[2].to, State::kClosed);
  EXPECT_EQ(seen_inside, (std::vector<State>{State::kOpen, State::kHalfOpen, State::kClosed}));
}

TEST_F(BreakerTest, ThrowingTripLeavesTheBreakerConsistent) {
  bool throw_now = false;
  Policy policy = DefaultPolicy();
  auto default_trip = policy.trip;
  policy.trip = [&](const Counts& c) {
    if (throw_now) throw std::runtime_error("policy bug");
    return default_trip(c);
  };
  Breaker breaker(Config{}, policy);
  Fail(breaker, 3);
  throw_now = true;
  auto ticket = breaker.Allow(clock.Now());
  ASSERT_TRUE(ticket);
  EXPECT_THROW(ticket->Settle(Outcome::kFailure, clock.Now()), std::runtime_error);
  EXPECT_TRUE(ticket->settled());
  EXPECT_EQ(breaker.counts(clock.Now()).consecutive_failures, 4);  // the result counted
  throw_now = false;
  Fail(breaker, 1);
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);  // and the next one trips it
}

TEST_F(BreakerTest, ThrowingProbePolicyFreesTheSlot) {
  Policy policy = DefaultPolicy();
  policy.probe = [](const Counts&) -> ProbeVerdict { throw std::logic_error("probe bug"); };
  Breaker breaker(Config{}, policy);
  Fail(breaker, 5);
  clock.Advance(seconds(10));
  auto probe = breaker.Allow(clock.Now());
  ASSERT_TRUE(probe);
  EXPECT_THROW(probe->Settle(Outcome::kSuccess, clock.Now()), std::logic_error);
  EXPECT_EQ(breaker.state(clock.Now()), State::kHalfOpen);
  EXPECT_TRUE(breaker.Allow(clock.Now()));  // the slot was freed
}

TEST_F(BreakerTest, TripNeverTrueTurnsTheBreakerOff) {
  Policy never = DefaultPolicy();
  never.trip = [](const Counts&) { return false; };
  Breaker breaker(Config{}, never);
  Fail(breaker, 1000);
  EXPECT_EQ(breaker.state(clock.Now()), State::kClosed);
}

// An operator's overrides (SetOverride), on the manual clock.
TEST_F(BreakerTest, ForceOpenRejectsAtOnceThenFollowsTheRules) {
  Breaker breaker(Config{}, DefaultPolicy(), Record());
  EXPECT_EQ(breaker.SetOverride(Override::kForceOpen, clock.Now()), Hold::kNone);
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
  EXPECT_FALSE(breaker.Allow(clock.Now()));
  EXPECT_EQ(breaker.hold(), Hold::kNone);
  ASSERT_EQ(transitions.size(), 1U);
  EXPECT_TRUE(transitions[0].forced);
  EXPECT_EQ(transitions[0].to, State::kOpen);
  clock.Advance(seconds(1));  // the first open interval, jitter included
  EXPECT_EQ(breaker.state(clock.Now()), State::kHalfOpen);
  EXPECT_FALSE(transitions.back().forced);
}

TEST_F(BreakerTest, ForceClosedAdmitsEveryAttemptAndNeverTrips) {
  Breaker breaker(Config{}, DefaultPolicy(), Record());
  Fail(breaker, 5);
  ASSERT_EQ(breaker.state(clock.Now()), State::kOpen);
  breaker.SetOverride(Override::kForceClosed, clock.Now());
  EXPECT_EQ(breaker.state(clock.Now()), State::kClosed);
  EXPECT_EQ(breaker.hold(), Hold::kForcedClosed);
  Fail(breaker, 100);  // each admitted (Attempt asserts it)
  EXPECT_EQ(breaker.state(clock.Now()), State::kClosed);
  EXPECT_EQ(breaker.counts(clock.Now()).consecutive_failures, 100);
  EXPECT_EQ(breaker.SetOverride(Override::kRelease, clock.Now()), Hold::kForcedClosed);
  EXPECT_EQ(breaker.state(clock.Now()), State::kClosed);
  Fail(breaker, 1);  // the rules again: the counts trip it
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
}

TEST_F(BreakerTest, IsolateMakesNoProbeUntilReleased) {
  Config config;
  config.calls_per_probe = 2;
  Breaker breaker(config, DefaultPolicy(), Record());
  breaker.SetOverride(Override::kIsolate, clock.Now());
  EXPECT_EQ(breaker.hold(), Hold::kIsolated);
  for (int i = 0; i < 20; ++i) {
    clock.Advance(minutes(1));  // past open_for, and past calls_per_probe
    auto rejected = breaker.Allow(clock.Now());
    ASSERT_FALSE(rejected);
    EXPECT_EQ(rejected.error().retry_after, config.open_for);
    EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);
  }
  EXPECT_EQ(breaker.SetOverride(Override::kRelease, clock.Now()), Hold::kIsolated);
  EXPECT_EQ(breaker.state(clock.Now()), State::kHalfOpen);
  auto probe = breaker.Allow(clock.Now());
  ASSERT_TRUE(probe);
  EXPECT_TRUE(probe->probe());
  ASSERT_EQ(transitions.size(), 2U);  // closed -> open, open -> half-open
  EXPECT_TRUE(transitions[0].forced);
  EXPECT_EQ(transitions[0].open_for, Duration::zero());  // no end while held
  EXPECT_TRUE(transitions[1].forced);
}

TEST_F(BreakerTest, ForceOpenEndsAnIsolationWithAFreshInterval) {
  Breaker breaker(Config{}, DefaultPolicy(), Record());
  breaker.SetOverride(Override::kIsolate, clock.Now());
  clock.Advance(minutes(5));
  EXPECT_EQ(breaker.SetOverride(Override::kForceOpen, clock.Now()), Hold::kIsolated);
  EXPECT_EQ(breaker.hold(), Hold::kNone);
  EXPECT_EQ(breaker.state(clock.Now()), State::kOpen);  // not half-open at once
  clock.Advance(seconds(1));
  EXPECT_EQ(breaker.state(clock.Now()), State::kHalfOpen);
}

TEST(OverrideNames, AsTelemetryWritesThem) {
  EXPECT_EQ(ToString(Override::kForceOpen), "force_open");
  EXPECT_EQ(ToString(Override::kForceClosed), "force_closed");
  EXPECT_EQ(ToString(Override::kIsolate), "isolate");
  EXPECT_EQ(ToString(Override::kRelease), "release");
  EXPECT_EQ(ToString(Hold::kForcedClosed), "forced-closed");
  EXPECT_EQ(ToString(Hold::kIsolated), "isolated");
}

}  // namespace
}  // namespace outbound::circuit
