// SPDX-License-Identifier: Apache-2.0
// outbound/http/body_pipe.h
//
// A request body the caller writes while the call runs, and while its
// answer already streams back (Request::StreamBodyFromPipe): what a gRPC
// client-streaming or bidirectional call sends.
//
// example: examples/headers/http.cc#body-pipe
//   auto pipe = std::make_shared<http::BodyPipe>();
//   auto answer =
//       client->SendAsync(http::Request::Post("/chat").StreamBodyFromPipe(pipe).StreamBodyTo(
//           [](std::string_view piece) {
//             std::cout << piece;  // as it comes
//             return true;
//           }));
//   pipe->Write("hello");  // false once the exchange has ended
//   pipe->Close();         // the body ends; the answer's end follows
//   Result<Response> response = answer.get();
//
// A call whose body is a pipe is a stream. It is never redirected, and
// sent again only while it opens: the pipe keeps what the transport took,
// up to kReplayBytes, until the answer's body begins, so an attempt that
// ends before that (no connection, a refused stream, an error answer) may
// be followed by another that sends the same bytes, under the retry rules
// of any request (its method, or Settings::non_idempotent_methods for
// gRPC). Once the answer's body has begun, or more than kReplayBytes were
// sent, the stream is sent once. Once its request headers are written, Settings::timeout,
// Request::WithTimeout, WithBodyTimeout and Settings::attempt_timeout no longer bound it: only its
// Context's deadline and cancellation end it (or the client's end, or the server's). Before that (a
// connection to open) they bound it as any call. Nor is it ever a slow call to the breaker
// (circuit::Config:: slow_call): a stream's answer may come whenever the server likes.
#ifndef OUTBOUND_HTTP_BODY_PIPE_H_
#define OUTBOUND_HTTP_BODY_PIPE_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace outbound::http {

namespace internal {
class PipeLink;
}  // namespace internal

// Thread-safe. Shared (std::shared_ptr) by the writer and the client, and
// carries the body of one call: given to a second, that call fails with
// kInvalidRequest.
class BodyPipe {
 public:
  static constexpr std::size_t kDefaultBound = std::size_t{64} * 1024;
  // Bytes sent that are kept for another attempt, at most.
  static constexpr std::size_t kReplayBytes = std::size_t{64} * 1024;

  // `bound`: bytes held at most that the transport has not taken yet (at
  // least 1).
  explicit BodyPipe(std::size_t bound = kDefaultBound);
  BodyPipe(const BodyPipe&) = delete;
  BodyPipe& operator=(const BodyPipe&) = delete;
  ~BodyPipe();

  // Appends `bytes` to the body, in order (concurrent Writes go one after
  // the other, never interleaved). Blocks the calling thread while `bound`
  // bytes wait for the transport (the server reads slower than the caller
  // writes: HTTP/2 flow control, a full socket). Returns false, at once or
  // while blocked, once the exchange has ended (its answer is complete, the
  // server reset the stream, the call was cancelled or its deadline passed,
  // the client was destroyed) or the pipe was closed; a Write cut short so
  // may have sent part of its bytes. Never call it from the client's
  // callbacks (a BodySink, a middleware): they run on the client's event
  // loop, which a blocked Write would wait for; there a Write that does
  // not fit at once appends nothing and returns false.
  bool Write(std::string_view bytes);

  // The body ends: END_STREAM on HTTP/2, the last chunk on HTTP/1.1. What
  // was written before still goes. Later Writes return false.
  void Close();

  // Bytes written that the transport has not taken yet.
  std::size_t buffered() const;
  // Whether the exchange has ended (Write returns false from then on).
  bool ended() const;

 private:
  friend class internal::PipeLink;

  const std::size_t bound_;
  std::mutex write_mu_;  // one Write at a time, so Writes never interleave
  mutable std::mutex mu_;
  std::condition_variable changed_;  // room made, bytes written, the end
  std::string buffer_;               // guarded by mu_
  std::size_t taken_ = 0;            // of buffer_, what the transport took
  // What was taken is kept at the front of buffer_ for another attempt,
  // until the answer's body begins or more than kReplayBytes were taken.
  bool replayable_ = true;
  bool closed_ = false;             // Close
  bool ended_ = false;              // the exchange ended
  bool claimed_ = false;            // a call has taken it
  bool transport_waiting_ = false;  // the transport found nothing: wake it
  std::function<void()> wake_;
  std::function<bool()> on_loop_;
};

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_BODY_PIPE_H_
