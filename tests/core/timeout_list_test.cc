// SPDX-License-Identifier: Apache-2.0
#include "outbound/internal/timeout_list.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "outbound/testing/manual_clock.h"

namespace outbound::internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Named final : TimeoutList::Entry {
  Named(std::string n, std::vector<std::string>& log) : name(std::move(n)), fired(log) {}
  void Expired() override {
    fired.push_back(name);
    if (then) then();
  }
  std::string name;
  std::vector<std::string>& fired;
  std::function<void()> then;
};

class TimeoutListTest : public ::testing::Test {
 protected:
  testing::ManualClock clock;
  TimePoint t0 = clock.Now();
  std::vector<std::string> fired;
  TimeoutList list{clock};
};

TEST_F(TimeoutListTest, ExpiresInDeadlineOrderOnOneClockTimer) {
  Named a("a", fired), b("b", fired), c("c", fired), d("d", fired);
  list.Arm(b, t0 + seconds(2));
  list.Arm(c, t0 + seconds(3));
  list.Arm(a, t0 + seconds(1));  // earlier than the rest: re-arms the clock
  list.Arm(d, t0 + seconds(2));  // same deadline as b: after it
  EXPECT_EQ(clock.pending_timers(), 1u);
  EXPECT_EQ(clock.next_timer(), t0 + seconds(1));

  clock.Advance(milliseconds(999));
  EXPECT_TRUE(fired.empty());
  clock.Advance(milliseconds(1));
  EXPECT_EQ(fired, (std::vector<std::string>{"a"}));
  clock.Advance(seconds(2));
  EXPECT_EQ(fired, (std::vector<std::string>{"a", "b", "d", "c"}));
  EXPECT_EQ(clock.pending_timers(), 0u);
}

TEST_F(TimeoutListTest, CancelledEntriesNeverExpire) {
  Named a("a", fired), b("b", fired), c("c", fired);
  list.Arm(a, t0 + seconds(1));
  list.Arm(b, t0 + seconds(2));
  list.Arm(c, t0 + seconds(3));
  EXPECT_TRUE(list.Cancel(a));  // the earliest: the clock timer fires early and re-arms
  EXPECT_TRUE(list.Cancel(c));
  EXPECT_FALSE(list.Cancel(c));  // not armed any more
  clock.Advance(seconds(1));
  EXPECT_TRUE(fired.empty());
  EXPECT_EQ(clock.next_timer(), t0 + seconds(2));
  clock.Advance(seconds(5));
  EXPECT_EQ(fired, (std::vector<std::string>{"b"}));
  EXPECT_FALSE(list.Cancel(b));  // expired
}

TEST_F(TimeoutListTest, AnEmptyListKeepsNoClockTimer) {
  Named a("a", fired), b("b", fired);
  list.Arm(a, t0 + seconds(1));
  list.Arm(b, t0 + seconds(2));
  list.Cancel(b);
  EXPECT_EQ(clock.pending_timers(), 1u);
  list.Cancel(a);
  EXPECT_EQ(clock.pending_timers(), 0u);
  list.Arm(a, t0 + seconds(4));  // armed again: a timer again
  EXPECT_EQ(clock.next_timer(), t0 + seconds(4));
  list.Cancel(a);
}

TEST_F(TimeoutListTest, ExpiredMayArmAndCancelEntries) {
  Named a("a", fired), b("b", fired), c("c", fired);
  a.then = [&] {
    list.Cancel(b);                // due at the same time: it must not expire
    list.Arm(a, t0 + seconds(5));  // itself, again
    list.Arm(c, t0 + seconds(1));  // already due: expires in this same pass
  };
  list.Arm(a, t0 + seconds(1));
  list.Arm(b, t0 + seconds(1));
  clock.Advance(seconds(1));
  EXPECT_EQ(fired, (std::vector<std::string>{"a", "c"}));
  a.then = nullptr;
  clock.Advance(seconds(4));
  EXPECT_EQ(fired, (std::vector<std::string>{"a", "c", "a"}));
}

// An owner cancelling on another thread while its entry expires waits for
// Expired() to return: then it may go.
TEST_F(TimeoutListTest, CancelWaitsForAnExpiryRunningOnAnotherThread) {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> returned{false};
  Named a("a", fired);
  a.then = [&] {
    entered.set_value();
    released.wait();
    returned = true;
  };
  list.Arm(a, t0 + seconds(1));
  std::thread advancer([&] { clock.Advance(seconds(1)); });
  entered.get_future().wait();
  std::promise<void> cancelling;
  std::thread canceller([&] {
    cancelling.set_value();
    EXPECT_FALSE(list.Cancel(a));
    EXPECT_TRUE(returned.load());  // not before Expired() returned
  });
  cancelling.get_future().wait();
  release.set_value();
  canceller.join();
  advancer.join();
}

}  // namespace
}  // namespace outbound::internal
