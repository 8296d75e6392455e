// SPDX-License-Identifier: Apache-2.0
// The thread that drives one client's transfers: an epoll loop that runs
// that client's connections (their sockets' readiness), and whatever is
// posted to it. One per client, so a dependency that keeps its transport busy cannot
// delay another client's calls; threads never grow with calls. Internal.
#ifndef OUTBOUND_SRC_HTTP_EVENT_LOOP_H_
#define OUTBOUND_SRC_HTTP_EVENT_LOOP_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "outbound/internal/mutex.h"

namespace outbound::http::internal {

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs `fn` on the loop thread. Thread-safe.
  void Post(std::function<void()> fn);
  // Runs `fn` on the loop thread and waits for it (runs it at once if
  // called on the loop thread).
  void RunAndWait(const std::function<void()>& fn);
  bool InLoop() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Loop thread only. Calls `on_ready(events)` when `fd` is ready for
  // `events` (EPOLLIN, EPOLLOUT); a second call for an fd replaces the first.
  // Readiness the loop holds for an fd that was closed and whose number a
  // socket watched since has taken reaches nobody.
  void Watch(int fd, std::uint32_t events, std::function<void(std::uint32_t)> on_ready);
  void Unwatch(int fd);

 private:
  void Run();
  void Wake();

  // What epoll hands back with an fd's readiness: the fd and the
  // generation of its registration (Watch).
  static std::uint64_t Tag(int fd, std::uint32_t generation) {
    return (std::uint64_t{generation} << 32) | static_cast<std::uint32_t>(fd);
  }

  struct Watcher {
    std::uint32_t generation;
    std::function<void(std::uint32_t)> on_ready;
  };

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  outbound::internal::Mutex mu_;
  std::deque<std::function<void()>> posted_;
  bool stopping_ = false;
  std::unordered_map<int, Watcher> watched_;
  std::uint32_t last_generation_ = 0;
  std::thread thread_;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_EVENT_LOOP_H_
