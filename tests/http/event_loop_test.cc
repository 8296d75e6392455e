// SPDX-License-Identifier: Apache-2.0
// The client's event loop hands each readiness epoll reports to the
// callback watching that fd, and only to the registration it was reported
// for: a callback that closes another fd, whose readiness the same wake-up
// already holds, and watches a new one that took its number, does not see
// the old readiness arrive at the new socket (a dial that lost a race, and
// the next connection's dial).
#include "../../src/http/event_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <future>

namespace outbound::http::internal {
namespace {

TEST(EventLoopTest, ReadinessOfAClosedFdDoesNotReachTheSocketThatTookItsNumber) {
  std::array<int, 2> a{};
  std::array<int, 2> b{};
  std::array<int, 2> c{-1, -1};
  ASSERT_EQ(pipe2(a.data(), O_CLOEXEC | O_NONBLOCK), 0);
  ASSERT_EQ(pipe2(b.data(), O_CLOEXEC | O_NONBLOCK), 0);
  // Both readable before the loop waits: one wake-up reports both.
  ASSERT_EQ(write(a[1], "x", 1), 1);
  ASSERT_EQ(write(b[1], "x", 1), 1);

  int first = -1;       // the fd whose callback ran first
  int closed = -1;      // the other, closed by that callback
  int stale_calls = 0;  // the new pipe's callback: it is never readable
  int other_calls = 0;  // the closed fd's own callback
  std::promise<void> done;
  EventLoop loop;
  // Whichever runs first closes the other and watches a new pipe, whose
  // read end takes the closed fd's number.
  auto on_ready = [&](int self, int other) {
    return [&, self, other](std::uint32_t) {
      if (first != -1) {
        ++other_calls;
        return;
      }
      first = self;
      closed = other;
      loop.Unwatch(self);
      loop.Unwatch(other);
      if (pipe2(c.data(), O_CLOEXEC | O_NONBLOCK) != 0) return done.set_value();
      // dup3 closes `other` and gives its number to the new pipe at once:
      // closed first and left to the lowest free number, it was taken in
      // between by another thread (a sanitizer's own) in the ASan build.
      if (dup3(c[0], other, O_CLOEXEC) != other) return done.set_value();
      close(c[0]);
      c[0] = other;
      loop.Watch(c[0], EPOLLIN, [&](std::uint32_t) { ++stale_calls; });
      // Runs after the rest of this wake-up's readiness.
      loop.Post([&] { done.set_value(); });
    };
  };
  loop.RunAndWait([&] {
    loop.Watch(a[0], EPOLLIN, on_ready(a[0], b[0]));
    loop.Watch(b[0], EPOLLIN, on_ready(b[0], a[0]));
  });
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  loop.RunAndWait([&] {
    if (c[0] >= 0) loop.Unwatch(c[0]);
  });
  ASSERT_NE(c[0], -1);
  EXPECT_EQ(c[0], closed) << "the new pipe did not take the closed fd's number: nothing shown";
  EXPECT_EQ(stale_calls, 0);
  EXPECT_EQ(other_calls, 0);
  for (int fd : {a[0], a[1], b[0], b[1]}) {
    if (fd != closed) close(fd);
  }
  for (int fd : c) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace
}  // namespace outbound::http::internal
