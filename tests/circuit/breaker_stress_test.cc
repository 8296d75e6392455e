// SPDX-License-Identifier: Apache-2.0
// Many threads on one breaker: run under ThreadSanitizer in CI. The
// invariants checked hold whatever the interleaving.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "outbound/circuit/breaker.h"
#include "outbound/testing/manual_clock.h"

namespace outbound::circuit {
namespace {

TEST(BreakerStressTest, ConcurrentAttemptsKeepProbeLimitAndTransitionOrder) {
  testing::ManualClock clock;
  std::mutex mu;
  std::vector<Transition> transitions;
  Breaker breaker(Config{.window = 20, .probes = 2, .open_for = std::chrono::milliseconds(5)},
                  DefaultPolicy(), [&](const Transition& t) {
                    std::lock_guard lock(mu);
                    transitions.push_back(t);
                  });
  std::atomic<int> probes_in_flight{0};
  std::atomic<int> max_probes_in_flight{0};
  std::atomic<bool> stop{false};
  // The fake time moves only while no worker is between its Allow and
  // counting its probe out. A probe stops being the breaker's once time
  // has passed: a probe of a half-open period that has ended (its
  // generation left), or one unsettled past probe_timeout. Without the
  // gate, a worker held up there would count a probe the breaker had
  // already let go, beside the next period's.
  std::atomic<bool> ticking{false};
  std::atomic<int> counting{0};
  auto enter = [&] {
    while (true) {
      while (ticking.load()) std::this_thread::yield();
      ++counting;
      if (!ticking.load()) return;
      --counting;
    }
  };

  auto worker = [&](int seed) {
    unsigned x = static_cast<unsigned>(seed);
    for (int i = 0; i < 20000; ++i) {
      x = x * 1103515245u + 12345u;
      enter();
      auto ticket = breaker.Allow(clock.Now());
      if (!ticket) {
        --counting;
        continue;
      }
      bool probe = ticket->probe();
      if (probe) {
        int now_in = ++probes_in_flight;
        int seen = max_probes_in_flight.load();
        while (now_in > seen && !max_probes_in_flight.compare_exchange_weak(seen, now_in)) {
        }
      }
      Outcome outcome = (x >> 16) % 3 == 0 ? Outcome::kSuccess : Outcome::kFailure;
      if (probe) --probes_in_flight;
      --counting;
      if ((x >> 8) % 10 == 0) continue;  // dropped unsettled
      ticket->Settle(outcome, clock.Now());
    }
  };
  std::thread ticker([&] {
    while (!stop) {
      ticking = true;
      while (counting.load() != 0) std::this_thread::yield();
      clock.Advance(std::chrono::milliseconds(1));
      ticking = false;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, t + 1);
  for (auto& th : threads) th.join();
  stop = true;
  ticker.join();

  EXPECT_LE(max_probes_in_flight.load(), 2);
  std::lock_guard lock(mu);
  ASSERT_FALSE(transitions.empty());
  // Delivered in order: each transition leaves the state the last one entered.
  State state = State::kClosed;
  for (const Transition& t : transitions) {
    EXPECT_EQ(t.from, state);
    state = t.to;
  }
}

TEST(BreakerStressTest, ClosedBreakerCountsEveryConcurrentResult) {
  testing::ManualClock clock;
  Policy never = DefaultPolicy();
  never.trip = [](const Counts&) { return false; };
  Breaker breaker(Config{.window = kMaxCount}, never);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        auto ticket = breaker.Allow(clock.Now());
        ticket->Settle(i % 2 ? Outcome::kSuccess : Outcome::kFailure, clock.Now());
      }
    });
  }
  for (auto& th : threads) th.join();
  Counts c = breaker.counts(clock.Now());
  EXPECT_EQ(c.successes, 4000);
  EXPECT_EQ(c.failures, 4000);
}

}  // namespace
}  // namespace outbound::circuit
