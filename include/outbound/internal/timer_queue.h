// SPDX-License-Identifier: Apache-2.0
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
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

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
  // Guarded by the queue's lock: whether the queue still holds the timer,
  // and whether it counts it among its cancelled ones.
  bool queued = false;
  bool counted_cancelled = false;
};

// A binary heap. A cancelled timer stays in it until it reaches the top or
// cancelled ones outnumber the rest (then they are swept out at once), so
// cancelling, the common fate of a timeout, costs no search.
class TimerQueue {
 public:
  // Adds a timer. Returns the state the caller wraps in a Timer.
  std::shared_ptr<TimerState> Add(TimePoint when, std::function<void()> callback);

  // Forgets a timer whose phase has just become kCancelled.
  void Remove(TimerState& state);

  // Removes and returns the earliest pending timer due at or before `now`,
  // if any.
  std::shared_ptr<TimerState> PopDue(TimePoint now);

  // The earliest deadline of a pending timer, if any.
  std::optional<TimePoint> Next() const;

  // Pending timers. Counts them one by one: for tests.
  std::size_t size() const;
  // The pending timers' deadlines, earliest first. For tests.
  std::vector<TimePoint> Pending() const;

  // Runs a popped timer's callback unless it was cancelled meanwhile.
  static void Fire(TimerState& state);

 private:
  struct Entry {
    TimePoint when;
    std::uint64_t seq;
    std::shared_ptr<TimerState> state;
  };
  // The heap's order: std::push_heap keeps the greatest on top, so "greater"
  // here means later.
  static bool Later(const Entry& a, const Entry& b) {
    return a.when != b.when ? a.when > b.when : a.seq > b.seq;
  }
  // Drops cancelled timers from the top. Holds mu_.
  void DropCancelledTop() const;
  // Takes the top entry off the heap. Holds mu_.
  Entry PopTop() const;

  mutable std::mutex mu_;
  // Mutable: dropping cancelled timers changes no answer the queue gives.
  mutable std::vector<Entry> heap_;
  mutable std::size_t cancelled_ = 0;  // entries counted as cancelled
  std::uint64_t next_seq_ = 0;
};

}  // namespace outbound::internal

#endif  // OUTBOUND_INTERNAL_TIMER_QUEUE_H_
