// outbound/internal/timer_queue.h
//
// The pending timers of one clock, in deadline order, ties in the order they
// were scheduled. Shared by the system clock and the test kit's manual
// clock, so both cancel, order and fire timers the same way. Not public API.
#ifndef OUTBOUND_INTERNAL_TIMER_QUEUE_H_
#define OUTBOUND_INTERNAL_TIMER_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "outbound/clock.h"

namespace outbound::internal {

struct TimerState {
  enum Phase : int { kPending, kFired, kCancelled };
  std::atomic<int> phase{kPending};
  // Touched only by whoever moved `phase` out of kPending.
  std::function<void()> callback;
  TimePoint when;
  std::uint64_t seq = 0;
  TimerQueue* queue = nullptr;
};

class TimerQueue {
 public:
  // Adds a timer. Returns the state the caller wraps in a Timer.
  std::shared_ptr<TimerState> Add(TimePoint when, std::function<void()> callback);

  // Forgets a cancelled timer.
  void Remove(const TimerState& state);

  // Removes and returns the earliest timer due at or before `now`, if any.
  std::shared_ptr<TimerState> PopDue(TimePoint now);

  // The earliest deadline, if any timer is pending.
  std::optional<TimePoint> Next() const;

  std::size_t size() const;

  // Runs a popped timer's callback unless it was cancelled meanwhile.
  static void Fire(TimerState& state);

 private:
  using Key = std::pair<TimePoint, std::uint64_t>;
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<TimerState>> timers_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace outbound::internal

#endif  // OUTBOUND_INTERNAL_TIMER_QUEUE_H_
