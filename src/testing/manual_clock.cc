// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/manual_clock.h"

namespace outbound::testing {

ManualClock::ManualClock() : ManualClock(TimePoint(std::chrono::hours(1000))) {}

std::chrono::system_clock::time_point ManualClock::WallNow() const {
  constexpr auto kStart = std::chrono::sys_days(std::chrono::year(2026) / 1 / 1);
  return std::chrono::system_clock::time_point(kStart) + (Now() - start_);
}

TimePoint ManualClock::Now() const {
  std::lock_guard lock(mu_);
  return now_;
}

Timer ManualClock::ScheduleAt(TimePoint when, std::function<void()> callback) {
  Timer timer(queue_.Add(when, std::move(callback)));
  {
    // Taking mu_ orders this after a waiter's check of the queue, so the
    // waiter is either past its check or already waiting for this notify.
    std::lock_guard lock(mu_);
  }
  changed_.notify_all();
  return timer;
}

void ManualClock::Advance(Duration delta) { AdvanceTo(Now() + delta); }

void ManualClock::AdvanceTo(TimePoint when) {
  std::lock_guard advancing(advancing_);
  while (auto due = queue_.PopDue(when)) {
    {
      std::lock_guard lock(mu_);
      now_ = std::max(now_, due->when);
    }
    internal::TimerQueue::Fire(*due);
  }
  {
    std::lock_guard lock(mu_);
    now_ = std::max(now_, when);
  }
  changed_.notify_all();
}

std::size_t ManualClock::pending_timers() const { return queue_.size(); }

std::optional<TimePoint> ManualClock::next_timer() const { return queue_.Next(); }

std::vector<TimePoint> ManualClock::timers() const { return queue_.Pending(); }

bool ManualClock::WaitForTimers(std::size_t n, std::chrono::milliseconds real_limit) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, real_limit, [&] { return queue_.size() >= n; });
}

bool ManualClock::WaitForTimerBy(TimePoint when, std::chrono::milliseconds real_limit) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, real_limit, [&] {
    std::optional<TimePoint> next = queue_.Next();
    return next && *next <= when;
  });
}

}  // namespace outbound::testing
