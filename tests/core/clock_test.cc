// SPDX-License-Identifier: Apache-2.0
// The system clock, the one real-time piece. Its timers are checked for
// firing and cancelling only: how long they take is never asserted.
#include "outbound/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

namespace outbound {
namespace {

TEST(SystemClockTest, NowNeverGoesBackwards) {
  TimePoint a = SystemClock().Now();
  TimePoint b = SystemClock().Now();
  EXPECT_LE(a, b);
}

TEST(SystemClockTest, TimerFiresAndSleepUntilReturns) {
  std::promise<void> fired;
  Timer timer = SystemClock().ScheduleAfter(Duration::zero(), [&] { fired.set_value(); });
  fired.get_future().wait();
  EXPECT_FALSE(timer.pending());
  SleepUntil(SystemClock(), SystemClock().Now());  // already due: returns
}

TEST(SystemClockTest, CancelledTimerNeverRuns) {
  std::atomic<bool> ran{false};
  Timer timer = SystemClock().ScheduleAfter(std::chrono::hours(1), [&] { ran = true; });
  EXPECT_TRUE(timer.pending());
  EXPECT_TRUE(timer.Cancel());
  EXPECT_FALSE(timer.Cancel());
  EXPECT_FALSE(timer.pending());
  EXPECT_FALSE(ran);
}

TEST(SystemClockTest, DestroyingATimerCancelsIt) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  std::weak_ptr<std::atomic<bool>> weak = flag;
  {
    Timer timer = SystemClock().ScheduleAfter(std::chrono::hours(1), [flag] { *flag = true; });
    flag.reset();
    EXPECT_FALSE(weak.expired());  // the callback holds it
  }
  EXPECT_TRUE(weak.expired());  // cancelling released what it captured
}

}  // namespace
}  // namespace outbound
