// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/manual_clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace outbound::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ManualClockTest, TimeMovesOnlyWhenAdvanced) {
  ManualClock clock;
  TimePoint start = clock.Now();
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(seconds(2));
  EXPECT_EQ(clock.Now(), start + seconds(2));
}

TEST(ManualClockTest, FiresDueTimersInDeadlineOrderTiesInSchedulingOrder) {
  ManualClock clock;
  TimePoint t0 = clock.Now();
  std::vector<std::string> fired;
  std::vector<TimePoint> seen;
  Timer c = clock.ScheduleAt(t0 + seconds(3), [&] { fired.push_back("c"); });
  Timer a1 = clock.ScheduleAt(t0 + seconds(1), [&] {
    fired.push_back("a1");
    seen.push_back(clock.Now());
  });
  Timer a2 = clock.ScheduleAt(t0 + seconds(1), [&] { fired.push_back("a2"); });
  Timer b = clock.ScheduleAt(t0 + seconds(2), [&] {
    fired.push_back("b");
    seen.push_back(clock.Now());
  });

  clock.Advance(milliseconds(999));
  EXPECT_TRUE(fired.empty());
  clock.Advance(milliseconds(1001));
  EXPECT_EQ(fired, (std::vector<std::string>{"a1", "a2", "b"}));
  // Each callback saw its own deadline as now.
  EXPECT_EQ(seen, (std::vector<TimePoint>{t0 + seconds(1), t0 + seconds(2)}));
  EXPECT_EQ(clock.pending_timers(), 1u);
  EXPECT_EQ(clock.next_timer(), t0 + seconds(3));
}

TEST(ManualClockTest, TimersListsEveryPendingDeadlineEarliestFirst) {
  ManualClock clock;
  const TimePoint t0 = clock.Now();
  Timer late = clock.ScheduleAt(t0 + seconds(5), [] {});
  Timer early = clock.ScheduleAt(t0 + seconds(2), [] {});
  Timer cancelled = clock.ScheduleAt(t0 + seconds(1), [] {});
  Timer twin = clock.ScheduleAt(t0 + seconds(5), [] {});
  cancelled.Cancel();
  EXPECT_EQ(clock.timers(),
            (std::vector<TimePoint>{t0 + seconds(2), t0 + seconds(5), t0 + seconds(5)}));
  clock.Advance(seconds(3));
  EXPECT_EQ(clock.timers(), (std::vector<TimePoint>{t0 + seconds(5), t0 + seconds(5)}));
  clock.Advance(seconds(2));
  EXPECT_TRUE(clock.timers().empty());
}

TEST(ManualClockTest, TimerScheduledByACallbackFiresInTheSameAdvance) {
  ManualClock clock;
  std::vector<int> fired;
  Timer second;
  Timer first = clock.ScheduleAfter(seconds(1), [&] {
    fired.push_back(1);
    second = clock.ScheduleAfter(seconds(1), [&] { fired.push_back(2); });
  });
  clock.Advance(seconds(5));
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
}

TEST(ManualClockTest, CancelledTimerDoesNotFire) {
  ManualClock clock;
  bool ran = false;
  Timer timer = clock.ScheduleAfter(seconds(1), [&] { ran = true; });
  EXPECT_EQ(clock.pending_timers(), 1u);
  EXPECT_TRUE(timer.Cancel());
  EXPECT_EQ(clock.pending_timers(), 0u);
  clock.Advance(seconds(2));
  EXPECT_FALSE(ran);
}

// Cancelled timers stay in the queue's heap until swept; whether swept or
// not, they never fire, and the pending ones keep their order.
TEST(ManualClockTest, ManyCancelledTimersNeverFireAndThePendingKeepTheirOrder) {
  ManualClock clock;
  TimePoint t0 = clock.Now();
  std::vector<int> fired;
  std::vector<Timer> timers;
  // Deadlines in a shuffled order, so the heap is really exercised.
  for (int i = 0; i < 1000; ++i) {
    int at = (i * 7919) % 1000;
    timers.push_back(
        clock.ScheduleAt(t0 + milliseconds(at), [&fired, at] { fired.push_back(at); }));
  }
  std::vector<int> expected;
  for (int i = 0; i < 1000; ++i) {
    int at = (i * 7919) % 1000;
    if (at % 100 == 0) {
      expected.push_back(at);
    } else {
      EXPECT_TRUE(timers[static_cast<std::size_t>(i)].Cancel());
    }
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(clock.pending_timers(), expected.size());
  EXPECT_EQ(clock.next_timer(), t0 + milliseconds(expected.front()));

  clock.Advance(seconds(1));
  EXPECT_EQ(fired, expected);
  EXPECT_EQ(clock.pending_timers(), 0u);
  EXPECT_EQ(clock.next_timer(), std::nullopt);
}

TEST(ManualClockTest, PastDeadlineFiresOnNextAdvance) {
  ManualClock clock;
  bool ran = false;
  Timer timer = clock.ScheduleAt(clock.Now() - seconds(1), [&] { ran = true; });
  clock.Advance(Duration::zero());
  EXPECT_TRUE(ran);
}

TEST(ManualClockTest, SleeperOnAnotherThreadWakesWhenTimePasses) {
  ManualClock clock;
  TimePoint wake_at = clock.Now() + seconds(30);
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    SleepUntil(clock, wake_at);
    woke = true;
  });
  ASSERT_TRUE(clock.WaitForTimers(1));
  clock.Advance(seconds(29));
  EXPECT_FALSE(woke);
  clock.Advance(seconds(1));
  sleeper.join();
  EXPECT_TRUE(woke);
}

TEST(ManualClockTest, WaitForTimersGivesUpWhenNothingIsScheduled) {
  ManualClock clock;
  EXPECT_FALSE(clock.WaitForTimers(1, milliseconds(1)));
}

// A wait of a known length has begun when a timer is due by then, whatever
// later timers (a call's deadline) are pending too.
TEST(ManualClockTest, WaitForTimerBySeesAWaitOfAKnownLength) {
  ManualClock clock;
  Timer deadline = clock.ScheduleAfter(std::chrono::seconds(10), [] {});
  EXPECT_FALSE(clock.WaitForTimerBy(clock.Now() + std::chrono::milliseconds(50),
                                    std::chrono::milliseconds(1)));
  Timer backoff;
  std::thread waiter([&] { backoff = clock.ScheduleAfter(std::chrono::milliseconds(50), [] {}); });
  EXPECT_TRUE(clock.WaitForTimerBy(clock.Now() + std::chrono::milliseconds(50)));
  waiter.join();
}

TEST(ManualClockTest, ConcurrentScheduleAndAdvanceFireEveryTimerOnce) {
  ManualClock clock;
  std::atomic<int> fired{0};
  constexpr int kPerThread = 2000;
  std::vector<std::thread> threads;
  std::vector<std::vector<Timer>> timers(2);
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        timers[static_cast<size_t>(t)].push_back(
            clock.ScheduleAfter(milliseconds(i % 7), [&] { ++fired; }));
      }
    });
  }
  std::thread advancer([&] {
    for (int i = 0; i < 100; ++i) clock.Advance(milliseconds(1));
  });
  for (auto& th : threads) th.join();
  advancer.join();
  clock.Advance(seconds(1));
  EXPECT_EQ(fired.load(), 2 * kPerThread);
}

}  // namespace
}  // namespace outbound::testing
