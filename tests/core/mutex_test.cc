// SPDX-License-Identifier: Apache-2.0
// internal::Mutex: one holder at a time under contention (threads that
// sleep on it are woken, none is lost), try_lock, and waiting with
// std::condition_variable_any. Under ThreadSanitizer the counter below is
// also checked for data races.
#include "outbound/internal/mutex.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace outbound::internal {
namespace {

TEST(MutexTest, ThreadsThatContendForItTakeTurns) {
  Mutex mu;
  long counter = 0;  // guarded by mu: a plain int, so lost updates show
  constexpr int kThreads = 8;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        std::lock_guard lock(mu);
        long seen = counter;
        if (i % 64 == 0) std::this_thread::yield();  // holds it a while: others sleep on it
        counter = seen + 1;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter, static_cast<long>(kThreads) * kEach);
}

TEST(MutexTest, TryLockFailsWhileItIsHeld) {
  Mutex mu;
  ASSERT_TRUE(mu.try_lock());
  bool other = true;
  std::thread([&] { other = mu.try_lock(); }).join();
  EXPECT_FALSE(other);
  mu.unlock();
  std::thread([&] {
    other = mu.try_lock();
    if (other) mu.unlock();
  }).join();
  EXPECT_TRUE(other);
}

TEST(MutexTest, AConditionVariableAnyWaitsOnIt) {
  Mutex mu;
  std::condition_variable_any changed;
  int stage = 0;
  std::thread waiter([&] {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return stage == 1; });
    stage = 2;
    changed.notify_all();
  });
  {
    std::lock_guard lock(mu);
    stage = 1;
  }
  changed.notify_all();
  std::unique_lock lock(mu);
  changed.wait(lock, [&] { return stage == 2; });
  lock.unlock();
  waiter.join();
  EXPECT_EQ(stage, 2);
}

}  // namespace
}  // namespace outbound::internal
