// SPDX-License-Identifier: Apache-2.0
// outbound/testing/manual_clock.h
//
// A Clock that moves only when a test moves it. Timers fire inside
// Advance(), in deadline order (ties in the order they were scheduled), each
// seeing Now() equal to its own deadline; so a test of a 2 s Retry-After
// takes no real time, and says exactly what happens when:
//
// example: examples/headers/testing.cc#manual-clock
//   testing::ManualClock clock;  // the client's, through its Runtime
//   auto call = client->SendAsync(http::Request::Get("/charges/1"));  // 503, Retry-After: 2
//   ASSERT_TRUE(server->WaitForRequests(1));                          // attempt 1 has arrived
//   ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + 2s));  // the client waits out Retry-After
//   clock.Advance(1999ms);                                // not yet
//   clock.Advance(1ms);                                   // the second attempt starts
//
// Thread-safe. Advance() runs callbacks on the calling thread, outside the
// clock's lock, so a callback may schedule or cancel timers; one scheduled at
// or before the target time fires within the same Advance().
#ifndef OUTBOUND_TESTING_MANUAL_CLOCK_H_
#define OUTBOUND_TESTING_MANUAL_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

#include "outbound/clock.h"
#include "outbound/internal/timer_queue.h"

namespace outbound::testing {

class ManualClock final : public Clock {
 public:
  // Starts at an arbitrary, fixed time (not zero, so "time 0" bugs show).
  ManualClock();
  explicit ManualClock(TimePoint start) : start_(start), now_(start) {}

  TimePoint Now() const override;
  // 2026-01-01T00:00:00Z at construction, moving with Now().
  std::chrono::system_clock::time_point WallNow() const override;
  Timer ScheduleAt(TimePoint when, std::function<void()> callback) override;

  // Moves time forward by `delta`, firing every timer that comes due.
  void Advance(Duration delta);
  // Moves time forward to `when` (no-op if it is already past).
  void AdvanceTo(TimePoint when);

  // Timers scheduled and not yet fired or cancelled.
  std::size_t pending_timers() const;
  // The earliest pending deadline, if any.
  std::optional<TimePoint> next_timer() const;
  // Every pending deadline, earliest first (one for each timer, so a time
  // two timers share comes twice): whether a wait of a known length has
  // been set when other timers come before it (a connection's idle close).
  std::vector<TimePoint> timers() const;

  // Blocks until at least `n` timers are pending, whoever set them. A
  // client's call has timers pending (its deadline, its attempt timeout)
  // from the moment it starts, so to know that a client has begun a wait,
  // use WaitForTimerBy. Gives up after
  // `real_limit` of real time (a safety net for a broken test, not a
  // tolerance) and returns false.
  bool WaitForTimers(std::size_t n,
                     std::chrono::milliseconds real_limit = std::chrono::seconds(10));

  // Blocks until a pending timer is due at or before `when`: how a test
  // knows that a wait of a known length has begun (a backoff of 50 ms is a
  // timer due by Now() + 50ms), whatever other, later timers are pending.
  // Gives up after `real_limit` of real time and returns false.
  bool WaitForTimerBy(TimePoint when,
                      std::chrono::milliseconds real_limit = std::chrono::seconds(10));

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  TimePoint start_;
  TimePoint now_;
  std::mutex advancing_;  // one Advance at a time keeps firing order total
  internal::TimerQueue queue_;
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_MANUAL_CLOCK_H_
