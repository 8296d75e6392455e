// SPDX-License-Identifier: Apache-2.0
// A dependency whose latency grows with the calls it holds, for the tests
// of adaptive concurrency (HTTP's and gRPC's), in fake time: `workers`
// calls in flight are answered in `base`; past that, each waits its turn,
// so a call that arrives as the n-th in flight is answered after
// base * max(1, n / workers). Its capacity is workers / base calls a
// second, reached at `workers` calls in flight (the knee): more calls in
// flight add only latency. (Latency base * n with no workers would put the
// knee at one call: a dependency that cannot serve two calls at once.)
#ifndef OUTBOUND_TESTS_TESTING_LOADED_DEPENDENCY_H_
#define OUTBOUND_TESTS_TESTING_LOADED_DEPENDENCY_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "outbound/clock.h"
#include "outbound/testing/manual_clock.h"

namespace outbound::testing {

class LoadedDependency {
 public:
  LoadedDependency(Clock& clock, Duration base, int workers)
      : clock_(clock), base_(base), workers_(workers) {}

  // A call arrives now: how long its answer takes (it holds a worker, or
  // its place in the queue, until then, even if the client gives up).
  // While hanging, it is never answered (and holds nothing).
  struct Arrival {
    Duration delay{0};
    bool hang = false;
  };
  Arrival Arrive() {
    std::lock_guard lock(mu_);
    TimePoint now = clock_.Now();
    std::erase_if(finishes_, [&](TimePoint t) { return t <= now; });
    ++arrived_;
    if (hanging_) return {.hang = true};
    int in_flight = static_cast<int>(finishes_.size()) + 1;
    max_in_flight_ = std::max(max_in_flight_, in_flight);
    Duration delay = std::chrono::duration_cast<Duration>(
        base_ * std::max(1.0, static_cast<double>(in_flight) / workers_));
    finishes_.push_back(now + delay);
    answers_.push_back({now + delay, delay});
    return {.delay = delay};
  }

  void SetBase(Duration base) {
    std::lock_guard lock(mu_);
    base_ = base;
  }
  void SetWorkers(int workers) {
    std::lock_guard lock(mu_);
    workers_ = workers;
  }
  void Hang(bool hang) {
    std::lock_guard lock(mu_);
    hanging_ = hang;
  }
  // The most calls it held at once since the last call of this.
  int TakeMaxInFlight() {
    std::lock_guard lock(mu_);
    return std::exchange(max_in_flight_, 0);
  }
  int arrived() const {
    std::lock_guard lock(mu_);
    return arrived_;
  }
  // The latencies of the answers given in [from, to).
  std::vector<Duration> AnswersBetween(TimePoint from, TimePoint to) const {
    std::lock_guard lock(mu_);
    std::vector<Duration> out;
    for (const auto& answer : answers_) {
      if (answer.at >= from && answer.at < to) out.push_back(answer.latency);
    }
    return out;
  }

 private:
  struct Answer {
    TimePoint at;
    Duration latency;
  };
  Clock& clock_;
  mutable std::mutex mu_;
  Duration base_;
  int workers_;
  bool hanging_ = false;
  std::vector<TimePoint> finishes_;  // of the calls it holds
  std::vector<Answer> answers_;
  int max_in_flight_ = 0;
  int arrived_ = 0;
};

// The p-th quantile (0 to 1) of `values`, by nearest rank.
inline Duration Quantile(std::vector<Duration> values, double p) {
  if (values.empty()) return Duration::zero();
  std::sort(values.begin(), values.end());
  auto rank = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(rank, values.size() - 1)];
}

// An open load: `per_tick` calls started at each tick of the clock, then
// the clock moved a tick, for `ticks` ticks. `start` starts one call and
// tells its end to the function it is given (rejected or not).
class OpenLoad {
 public:
  using Start = std::function<void(std::function<void(bool rejected)>)>;
  explicit OpenLoad(ManualClock& clock, Start start) : clock_(clock), start_(std::move(start)) {}

  void Run(int ticks, int per_tick, Duration tick, const std::function<void()>& each_tick = {}) {
    for (int t = 0; t < ticks; ++t) {
      for (int i = 0; i < per_tick; ++i) {
        {
          std::lock_guard lock(mu_);
          ++issued_;
        }
        start_([this](bool rejected) {
          std::lock_guard lock(mu_);
          if (rejected) ++rejected_;
          ++ended_;
          ended_cv_.notify_all();
        });
      }
      clock_.Advance(tick);
      if (each_tick) each_tick();
    }
  }

  // Waits (in real time, bounded) for every call started to have ended,
  // moving the clock a second at a time for those still held.
  bool Drain() {
    for (int i = 0; i < 600; ++i) {
      std::unique_lock lock(mu_);
      if (ended_cv_.wait_for(lock, std::chrono::milliseconds(50),
                             [&] { return ended_ == issued_; })) {
        return true;
      }
      lock.unlock();
      clock_.Advance(std::chrono::seconds(1));
    }
    return false;
  }

  int issued() const {
    std::lock_guard lock(mu_);
    return issued_;
  }
  // Rejected so far (call Drain first for every call's end).
  int rejected() const {
    std::lock_guard lock(mu_);
    return rejected_;
  }

 private:
  ManualClock& clock_;
  Start start_;
  mutable std::mutex mu_;
  std::condition_variable ended_cv_;
  int issued_ = 0;
  int ended_ = 0;
  int rejected_ = 0;
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTS_TESTING_LOADED_DEPENDENCY_H_
