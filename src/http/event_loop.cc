// SPDX-License-Identifier: Apache-2.0
#include "event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <future>
#include <vector>

namespace outbound::http::internal {

EventLoop::EventLoop() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = Tag(wake_fd_, 0);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event);
  thread_ = std::thread([this] { Run(); });
}

EventLoop::~EventLoop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  close(wake_fd_);
  close(epoll_fd_);
}

void EventLoop::Post(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    posted_.push_back(std::move(fn));
  }
  // On the loop thread, the loop looks at posted_ before it waits again.
  if (!InLoop()) Wake();
}

void EventLoop::RunAndWait(const std::function<void()>& fn) {
  if (InLoop()) {
    fn();
    return;
  }
  std::promise<void> done;
  Post([&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

void EventLoop::Wake() {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void EventLoop::Watch(int fd, std::uint32_t events, std::function<void(std::uint32_t)> on_ready) {
  auto it = watched_.find(fd);
  bool known = it != watched_.end();
  // A new registration of the number is a new generation; changing the
  // events watched keeps it.
  std::uint32_t generation = known ? it->second.generation : ++last_generation_;
  watched_[fd] = Watcher{generation, std::move(on_ready)};
  epoll_event event{};
  event.events = events;
  event.data.u64 = Tag(fd, generation);
  epoll_ctl(epoll_fd_, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event);
}

void EventLoop::Unwatch(int fd) {
  if (watched_.erase(fd) > 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void EventLoop::Run() {
  std::vector<epoll_event> events(64);
  for (;;) {
    std::deque<std::function<void()>> posted;
    {
      std::lock_guard lock(mu_);
      if (stopping_ && posted_.empty()) return;
      posted.swap(posted_);
    }
    for (auto& fn : posted) fn();

    // The loop has no timers of its own: every timeout runs on the
    // Runtime's clock, which posts here.
    int timeout_ms = -1;
    {
      std::lock_guard lock(mu_);
      if (!posted_.empty() || stopping_) timeout_ms = 0;
    }
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int i = 0; i < n; ++i) {
      std::uint64_t tag = events[static_cast<size_t>(i)].data.u64;
      int fd = static_cast<int>(tag & 0xffffffffu);
      if (fd == wake_fd_) {
        std::uint64_t drained;
        [[maybe_unused]] ssize_t r = read(wake_fd_, &drained, sizeof drained);
        continue;
      }
      auto it = watched_.find(fd);
      // Unwatched since; or closed, and its number taken by a socket
      // watched anew, earlier in this wake-up: the readiness was the old
      // socket's.
      if (it == watched_.end() || it->second.generation != tag >> 32) continue;
      auto on_ready = it->second.on_ready;  // the callback may unwatch fd
      on_ready(events[static_cast<size_t>(i)].events);
    }
  }
}

}  // namespace outbound::http::internal
