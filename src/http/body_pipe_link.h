// SPDX-License-Identifier: Apache-2.0
// The client's side of a BodyPipe (outbound/http/body_pipe.h): the exchange
// that carries the pipe's body ties itself to it, takes its bytes without
// waiting, and is woken when bytes or the end come for a transport that
// found none. Internal.
#ifndef OUTBOUND_SRC_HTTP_BODY_PIPE_LINK_H_
#define OUTBOUND_SRC_HTTP_BODY_PIPE_LINK_H_

#include <cstddef>
#include <functional>
#include <span>

#include "outbound/error.h"
#include "outbound/http/body_pipe.h"

namespace outbound::http::internal {

class PipeLink {
 public:
  // The call that carries the pipe's body takes it: false if another did
  // before (a pipe carries one call's body).
  static bool Claim(BodyPipe& pipe);

  // Ties `pipe` to the exchange that carries it. `wake` runs, on a
  // writer's thread and outside the pipe's lock, once bytes or the end
  // come after a Take found none; `on_loop` says whether the calling
  // thread is the transport's own. False if the pipe has ended.
  static bool Attach(BodyPipe& pipe, std::function<void()> wake, std::function<bool()> on_loop);

  struct Taken {
    std::size_t size = 0;  // bytes copied
    bool end = false;      // the body has ended with them (closed, all taken)
  };
  // Copies what is buffered, up to `buffer.size()` bytes, without waiting.
  // Nothing and no end: the transport waits for its wake.
  static Taken Take(BodyPipe& pipe, std::span<char> buffer);

  // The same, waiting for bytes or the end, for a reader off the event
  // loop (the test kit's transports). kCancelled once the pipe has ended.
  static Result<std::size_t> TakeWaiting(BodyPipe& pipe, std::span<char> buffer);

  // The exchange has ended and the call may go on: its `wake` is let go,
  // the body is kept. The next attempt's exchange Attaches again.
  static void Detach(BodyPipe& pipe);

  // For another attempt: what was taken is taken again, from the start.
  // False once that cannot be (Commit, or more than kReplayBytes taken).
  static bool Rewind(BodyPipe& pipe);

  // The answer's body has begun: the stream is final, and what was taken
  // is let go.
  static void Commit(BodyPipe& pipe);

  // The call has ended: writers blocked, and later ones, get false; what
  // is buffered is dropped; `wake` is let go. Idempotent.
  static void Finish(BodyPipe& pipe);

 private:
  // After `n` bytes were taken: what is kept for another attempt, or what
  // of the front can go. Under the pipe's lock.
  static void Took(BodyPipe& pipe, std::size_t n);
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_BODY_PIPE_LINK_H_
