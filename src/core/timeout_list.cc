// SPDX-License-Identifier: Apache-2.0
#include "outbound/internal/timeout_list.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "outbound/internal/mutex.h"

namespace outbound::internal {

struct TimeoutList::State : std::enable_shared_from_this<State> {
  explicit State(Clock& c) : clock(c) {}

  // Links `e` in deadline order, after entries with the same deadline.
  // Searches from the tail: a new timeout is nearly always the latest.
  void Link(Entry& e) {
    Entry* after = tail;
    while (after != nullptr && after->deadline_ > e.deadline_) after = after->prev_;
    e.prev_ = after;
    e.next_ = after != nullptr ? after->next_ : head;
    (e.next_ != nullptr ? e.next_->prev_ : tail) = &e;
    (after != nullptr ? after->next_ : head) = &e;
    e.linked_ = true;
  }

  void Unlink(Entry& e) {
    (e.prev_ != nullptr ? e.prev_->next_ : head) = e.next_;
    (e.next_ != nullptr ? e.next_->prev_ : tail) = e.prev_;
    e.prev_ = e.next_ = nullptr;
    e.linked_ = false;
  }

  void ArmTimer(TimePoint when) {
    armed_for = when;
    timer = clock.ScheduleAt(when, [self = shared_from_this()] { self->Fire(); });
  }

  void Fire() {
    std::unique_lock lock(mu);
    armed_for = TimePoint::max();
    while (head != nullptr && head->deadline_ <= clock.Now()) {
      Entry* e = head;
      Unlink(*e);
      expiring = e;
      expiring_thread = std::this_thread::get_id();
      lock.unlock();
      e->Expired();  // e may be gone when this returns
      lock.lock();
      expiring = nullptr;
      expired.notify_all();
    }
    if (head != nullptr) ArmTimer(head->deadline_);
  }

  Clock& clock;
  Mutex mu;
  std::condition_variable_any expired;  // an entry's Expired() returned
  Entry* head = nullptr;
  Entry* tail = nullptr;
  // Armed for `armed_for` whenever the list holds an entry: at its earliest
  // deadline, or earlier if that entry was cancelled since (the timer then
  // finds nothing due and re-arms).
  Timer timer;
  TimePoint armed_for = TimePoint::max();
  Entry* expiring = nullptr;  // whose Expired() runs now, on expiring_thread
  std::thread::id expiring_thread;
};

TimeoutList::TimeoutList(Clock& clock) : state_(std::make_shared<State>(clock)) {}

TimeoutList::~TimeoutList() {
  std::lock_guard lock(state_->mu);
  // Releases the timer's hold on the state; a firing one still holds it.
  state_->timer.Cancel();
}

void TimeoutList::Arm(Entry& entry, TimePoint deadline) {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  entry.deadline_ = deadline;
  s.Link(entry);
  if (deadline < s.armed_for) s.ArmTimer(deadline);
}

bool TimeoutList::Cancel(Entry& entry) {
  State& s = *state_;
  std::unique_lock lock(s.mu);
  if (entry.linked_) {
    s.Unlink(entry);
    if (s.head == nullptr) {  // nothing left to time: no timer either
      s.timer.Cancel();
      s.armed_for = TimePoint::max();
    }
    return true;
  }
  if (s.expiring == &entry && s.expiring_thread != std::this_thread::get_id()) {
    s.expired.wait(lock, [&] { return s.expiring != &entry; });
  }
  return false;
}

}  // namespace outbound::internal
