// SPDX-License-Identifier: Apache-2.0
// outbound/clock.h
//
// Time, as the library sees it. Every wait in outbound (a backoff, a
// Retry-After, an attempt's timeout, the call's deadline, the breaker's
// OpenFor) is a timer on a `Clock`, and every "now" is `Clock::Now()`. The
// process's clock is `SystemClock()`; tests pass a `testing::ManualClock`
// and make those waits free.
//
// example: examples/headers/core.cc#clock
//   Timer timeout = clock.ScheduleAfter(5s, [&] { attempt.Cancel(); });
//   // ... the headers arrived first:
//   timeout.Cancel();  // or let `timeout` go out of scope
//
// `src/core/system_clock.cc` is the only file that reads real time; a check
// in the test suite refuses any other read of real time or real sleep.
#ifndef OUTBOUND_CLOCK_H_
#define OUTBOUND_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace outbound {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

// `t` plus `d`, or TimePoint::max() where the sum would not fit: a setting
// as long as Duration::max() (a way to say "no limit") is a time never
// reached, not one in the past.
constexpr TimePoint AddSaturated(TimePoint t, Duration d) {
  return d > Duration::zero() && t > TimePoint::max() - d ? TimePoint::max() : t + d;
}

namespace internal {
class TimerQueue;
struct TimerState;
}  // namespace internal

// A scheduled callback. Move-only; destroying a pending Timer cancels it, so
// a timer never outlives the object that armed it.
//
// The Clock that made a Timer must outlive it.
class Timer {
 public:
  Timer() = default;
  explicit Timer(std::shared_ptr<internal::TimerState> state) : state_(std::move(state)) {}
  Timer(Timer&&) noexcept = default;
  Timer& operator=(Timer&& other) noexcept;
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  ~Timer() { Cancel(); }

  // Stops the callback from running. Returns true if it had not run and now
  // never will; false if it already ran, is running now, or was cancelled.
  // It does not wait for a callback running on another thread.
  bool Cancel();

  // True until the callback starts or the timer is cancelled.
  bool pending() const;

 private:
  std::shared_ptr<internal::TimerState> state_;
};

// A steady clock with timers. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  // The current time. Steady: it never goes backwards.
  virtual TimePoint Now() const = 0;

  // The calendar time, for the few things dated by the calendar, such as a
  // Retry-After given as an HTTP-date. Never used to measure a wait.
  virtual std::chrono::system_clock::time_point WallNow() const = 0;

  // Runs `callback` once, at or after `when`, on a thread of the clock's
  // choosing (the timer thread of the system clock; the thread that advances
  // a manual clock). A `when` already past runs at the clock's next chance.
  [[nodiscard]] virtual Timer ScheduleAt(TimePoint when, std::function<void()> callback) = 0;

  [[nodiscard]] Timer ScheduleAfter(Duration delay, std::function<void()> callback) {
    return ScheduleAt(AddSaturated(Now(), delay), std::move(callback));
  }
};

// Blocks the calling thread until `when` has come on `clock`. On a manual
// clock it returns when a test advances the clock past `when`.
void SleepUntil(Clock& clock, TimePoint when);

// The process's steady clock. Its timers run on one thread that it starts
// on first use, however many clients share it.
Clock& SystemClock();

}  // namespace outbound

#endif  // OUTBOUND_CLOCK_H_
