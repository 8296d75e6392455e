// SPDX-License-Identifier: Apache-2.0
// The one file in outbound that reads real time.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "outbound/clock.h"
#include "outbound/internal/timer_queue.h"

namespace outbound {
namespace {

class SystemClockImpl final : public Clock {
 public:
  ~SystemClockImpl() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  TimePoint Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
  }

  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }

  Timer ScheduleAt(TimePoint when, std::function<void()> callback) override {
    auto state = queue_.Add(when, std::move(callback));
    bool wake = false;
    {
      std::lock_guard lock(mu_);
      if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
      // The thread sleeps until the earliest deadline it knows; a later
      // timer (the common case: timeouts that are cancelled) needs no wake.
      wake = when < sleeping_until_;
    }
    if (wake) wake_.notify_all();
    return Timer(std::move(state));
  }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      while (auto due = queue_.PopDue(Now())) internal::TimerQueue::Fire(*due);
      lock.lock();
      if (stopping_) break;
      std::optional<TimePoint> next = queue_.Next();
      sleeping_until_ = next.value_or(TimePoint::max());
      if (next) {
        wake_.wait_until(lock, *next);
      } else {
        wake_.wait(lock);
      }
      sleeping_until_ = TimePoint::min();  // awake: it will look at the queue again
    }
  }

  internal::TimerQueue queue_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  TimePoint sleeping_until_ = TimePoint::min();  // guarded by mu_
  std::thread thread_;
};

}  // namespace

Clock& SystemClock() {
  // Never destroyed: threads that outlive main (the HTTP event loop) may
  // still read the time while static destructors run.
  static auto* clock = new SystemClockImpl;
  return *clock;
}

}  // namespace outbound
