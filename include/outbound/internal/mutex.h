// SPDX-License-Identifier: Apache-2.0
// outbound/internal/mutex.h
//
// A mutex for the locks a call takes on its way through the client (its
// attempt's, its timers', its dispatcher's queue): held for a few
// instructions, almost never contended. Locking and unlocking one that
// nobody waits for is one atomic instruction each, inline; std::mutex
// costs a call into the C library and about 50 instructions a pair, and a
// call takes some twenty such pairs. A thread that finds it held sleeps
// (std::atomic::wait, a futex on Linux) rather than spins.
//
// A Lockable: use it with std::lock_guard and std::unique_lock, and with
// std::condition_variable_any to wait.
//
// Not public API.
#ifndef OUTBOUND_INTERNAL_MUTEX_H_
#define OUTBOUND_INTERNAL_MUTEX_H_

#include <atomic>

namespace outbound::internal {

class Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() {
    int state = kFree;
    if (!state_.compare_exchange_strong(state, kLocked, std::memory_order_acquire)) {
      LockContended(state);
    }
  }

  bool try_lock() {
    int state = kFree;
    return state_.compare_exchange_strong(state, kLocked, std::memory_order_acquire);
  }

  // Reads and writes the mutex once; a wake that follows uses only its
  // address (libstdc++'s notify is a futex wake, which reads no memory),
  // so, as with std::mutex, the thread that takes it next may destroy it.
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kWaitedFor) state_.notify_one();
  }

 private:
  static constexpr int kFree = 0;
  static constexpr int kLocked = 1;     // held, nobody waiting
  static constexpr int kWaitedFor = 2;  // held, and someone may be waiting

  // Marks the mutex waited for, then sleeps until it is free; it takes it
  // marked so, as another may still wait (its unlock wakes one more).
  void LockContended(int state) {
    if (state != kWaitedFor) state = state_.exchange(kWaitedFor, std::memory_order_acquire);
    while (state != kFree) {
      state_.wait(kWaitedFor, std::memory_order_relaxed);
      state = state_.exchange(kWaitedFor, std::memory_order_acquire);
    }
  }

  std::atomic<int> state_{kFree};
};

}  // namespace outbound::internal

#endif  // OUTBOUND_INTERNAL_MUTEX_H_
