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
  timers_.emplace(Key{when, state->seq}, state);
  return state;
}

void TimerQueue::Remove(const TimerState& state) {
  std::lock_guard lock(mu_);
  timers_.erase(Key{state.when, state.seq});
}

std::shared_ptr<TimerState> TimerQueue::PopDue(TimePoint now) {
  std::lock_guard lock(mu_);
  if (timers_.empty() || timers_.begin()->first.first > now) return nullptr;
  auto node = timers_.extract(timers_.begin());
  return std::move(node.mapped());
}

std::optional<TimePoint> TimerQueue::Next() const {
  std::lock_guard lock(mu_);
  if (timers_.empty()) return std::nullopt;
  return timers_.begin()->first.first;
}

std::size_t TimerQueue::size() const {
  std::lock_guard lock(mu_);
  return timers_.size();
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
