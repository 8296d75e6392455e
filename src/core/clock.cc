// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "outbound/internal/timer_queue.h"

namespace outbound {

Timer& Timer::operator=(Timer&& other) noexcept {
  if (this != &other) {
    Cancel();
    state_ = std::move(other.state_);
  }
  return *this;
}

bool Timer::Cancel() {
  if (!state_) return false;
  int expected = internal::TimerState::kPending;
  if (!state_->phase.compare_exchange_strong(expected, internal::TimerState::kCancelled)) {
    return false;
  }
  state_->queue->Remove(*state_);
  state_->callback = nullptr;  // release what the callback captured, now
  return true;
}

bool Timer::pending() const {
  return state_ && state_->phase.load() == internal::TimerState::kPending;
}

void SleepUntil(Clock& clock, TimePoint when) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Timer timer = clock.ScheduleAt(when, [&] {
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done; });
}

namespace internal {

std::shared_ptr<TimerState> TimerQueue::Add(TimePoint when, std::function<void()> callback) {
  auto state = std::make_shared<TimerState>();
  state->callback = std::move(callback);
  state->when = when;
  state->queue = this;
  std::lock_guard lock(mu_);
  state->seq = next_seq_++;
  state->queued = true;
  heap_.push_back(Entry{when, state->seq, state});
  std::push_heap(heap_.begin(), heap_.end(), Later);
  return state;
}

void TimerQueue::Remove(TimerState& state) {
  std::lock_guard lock(mu_);
  if (!state.queued || state.counted_cancelled) return;
  state.counted_cancelled = true;
  ++cancelled_;
  // Swept once they are most of the heap: memory stays within twice the
  // pending timers, and each sweep is paid for by as many cancellations.
  if (cancelled_ > 64 && cancelled_ * 2 > heap_.size()) {
    std::erase_if(heap_, [](const Entry& e) {
      if (e.state->phase.load() != TimerState::kCancelled) return false;
      e.state->queued = false;
      return true;
    });
    cancelled_ = 0;
    std::make_heap(heap_.begin(), heap_.end(), Later);
  }
}

TimerQueue::Entry TimerQueue::PopTop() const {
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  Entry top = std::move(heap_.back());
  heap_.pop_back();
  top.state->queued = false;
  if (top.state->counted_cancelled) --cancelled_;
  return top;
}

void TimerQueue::DropCancelledTop() const {
  while (!heap_.empty() && heap_.front().state->phase.load() == TimerState::kCancelled) PopTop();
}

std::shared_ptr<TimerState> TimerQueue::PopDue(TimePoint now) {
  std::lock_guard lock(mu_);
  DropCancelledTop();
  if (heap_.empty() || heap_.front().when > now) return nullptr;
  return PopTop().state;
}

std::optional<TimePoint> TimerQueue::Next() const {
  std::lock_guard lock(mu_);
  DropCancelledTop();
  if (heap_.empty()) return std::nullopt;
  return heap_.front().when;
}

std::size_t TimerQueue::size() const {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(std::count_if(heap_.begin(), heap_.end(), [](const Entry& e) {
    return e.state->phase.load() == TimerState::kPending;
  }));
}

std::vector<TimePoint> TimerQueue::Pending() const {
  std::vector<TimePoint> deadlines;
  {
    std::lock_guard lock(mu_);
    for (const Entry& e : heap_) {
      if (e.state->phase.load() == TimerState::kPending) deadlines.push_back(e.when);
    }
  }
  std::sort(deadlines.begin(), deadlines.end());
  return deadlines;
}

void TimerQueue::Fire(TimerState& state) {
  int expected = TimerState::kPending;
  if (!state.phase.compare_exchange_strong(expected, TimerState::kFired)) return;
  auto callback = std::move(state.callback);
  state.callback = nullptr;
  callback();
}

}  // namespace internal
}  // namespace outbound
