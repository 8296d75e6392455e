// SPDX-License-Identifier: Apache-2.0
// outbound/http/receive_window.h
//
// Read-side flow control for an answer streamed to a BodySink that hands
// what it gets to a reader on another thread (Request::StreamBodyTo(sink,
// window)): the sink holds the window once the reader has fallen behind,
// and the reader opens it again as it catches up, so what waits between
// them stays bounded whatever the server sends. What rpc::Stream reads
// through.
//
// example: examples/headers/http.cc#receive-window
//   auto window = std::make_shared<http::ReceiveWindow>();
//   client->SendAsync(http::Request::Get("/feed").StreamBodyTo(
//                         [&](std::string_view piece) {
//                           if (inbox.Push(piece) > kReadAhead) window->Hold();  // reader behind
//                           return true;
//                         },
//                         window),
//                     [&](Result<Response>, std::exception_ptr) { inbox.Close(); });
//   while (std::optional<std::string> piece = inbox.Pop()) {  // the reader's thread
//     if (inbox.bytes() < kReadAhead / 2) window->Open();
//     Use(*piece);
//   }
//
// While it is held, the sink still gets what is on its way, and nothing
// more is asked for. On HTTP/2 the body bytes that arrive are not
// acknowledged, so the server sends at most the stream's flow-control
// window (1 MiB) more and then waits; the connection's other streams go
// on, as its own window is acknowledged. On HTTP/1.1 the connection is not
// read again until the window opens. A held window does not stop the
// call's deadline: a reader that never catches up ends the call when that
// passes.
#ifndef OUTBOUND_HTTP_RECEIVE_WINDOW_H_
#define OUTBOUND_HTTP_RECEIVE_WINDOW_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

namespace outbound::http {

namespace internal {
class WindowLink;
}  // namespace internal

// Thread-safe. Shared (std::shared_ptr) by the sink, its reader and the
// client; open when made.
class ReceiveWindow {
 public:
  ReceiveWindow() = default;
  ReceiveWindow(const ReceiveWindow&) = delete;
  ReceiveWindow& operator=(const ReceiveWindow&) = delete;

  // Asks for no more of the body until Open. From any thread; holding a
  // held window does nothing.
  void Hold() { held_.store(true, std::memory_order_relaxed); }

  // Lets the body flow again: what arrived while it was held is
  // acknowledged. From any thread; opening an open window does nothing.
  void Open();

  bool held() const { return held_.load(std::memory_order_relaxed); }

 private:
  friend class internal::WindowLink;

  std::atomic<bool> held_{false};
  std::mutex mu_;
  // Wakes the exchange carrying the call, while one does (WindowLink), and
  // which exchange that is.
  std::function<void()> wake_;
  std::uint64_t exchange_ = 0;
};

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_RECEIVE_WINDOW_H_
