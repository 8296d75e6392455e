// SPDX-License-Identifier: Apache-2.0
// outbound/internal/timeout_list.h
//
// Many timeouts on one Clock for the price of one timer. A client arms a
// timeout for every call and every attempt, and nearly all of them are
// cancelled long before they expire; as Clock timers each would cost an
// allocation, a heap insertion and a lock of the clock's timer thread. Here
// a timeout is an `Entry` the owner embeds in itself, linked into a list in
// deadline order, and the list keeps one Clock timer armed, for its
// earliest entry. Timeouts of one length arrive in deadline order, so
// arming appends and cancelling unlinks: no allocation, no search.
//
// example: examples/headers/core.cc#timeout-list
//   struct Call : internal::TimeoutList::Entry {
//     explicit Call(internal::TimeoutList& timeouts) : list(timeouts) {}
//     void Expired() override {}                // on the clock's thread
//     ~Call() override { list.Cancel(*this); }  // before anything Expired uses goes
//     internal::TimeoutList& list;
//   };
//   Call call(list);
//   list.Arm(call, deadline);
//
// Not public API.
#ifndef OUTBOUND_INTERNAL_TIMEOUT_LIST_H_
#define OUTBOUND_INTERNAL_TIMEOUT_LIST_H_

#include <memory>

#include "outbound/clock.h"

namespace outbound::internal {

class TimeoutList {
 public:
  // A timeout, embedded in whatever it times out.
  class Entry {
   public:
    Entry() = default;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

    // The deadline passed. Runs once, on the clock's thread, without the
    // list's lock: it may arm or cancel entries, this one included.
    virtual void Expired() = 0;

   protected:
    // The owner cancels the entry before it is destroyed (see Cancel).
    virtual ~Entry() = default;

   private:
    friend class TimeoutList;
    Entry* prev_ = nullptr;
    Entry* next_ = nullptr;
    TimePoint deadline_{};
    bool linked_ = false;
  };

  // `clock` must outlive the list.
  explicit TimeoutList(Clock& clock);
  // Every entry must have been cancelled or have expired.
  ~TimeoutList();
  TimeoutList(const TimeoutList&) = delete;
  TimeoutList& operator=(const TimeoutList&) = delete;

  // Arms `entry` to expire at `deadline`. The entry must not be armed.
  // Thread-safe.
  void Arm(Entry& entry, TimePoint deadline);

  // Disarms `entry`. Returns true if it was armed and now never expires;
  // false if it was not armed, has expired, or is expiring now. If it is
  // expiring on another thread, waits until Expired() returns, so once
  // Cancel returns the owner may go. Thread-safe.
  bool Cancel(Entry& entry);

 private:
  struct State;
  // Shared with the clock timer's callback, so a list that goes while its
  // timer is firing is not used after it is gone.
  std::shared_ptr<State> state_;
};

}  // namespace outbound::internal

#endif  // OUTBOUND_INTERNAL_TIMEOUT_LIST_H_
