// SPDX-License-Identifier: Apache-2.0
// A client-streaming or bidirectional call on the call core: the request
// body is a pipe the caller writes framed messages into while the answer
// streams back through a Deframer into a queue the caller reads, held to
// about kReadAhead bytes by the answer's ReceiveWindow. The core runs the
// call as any other (breaker, failure injection, telemetry); only the
// context's deadline bounds it.
#include "outbound/rpc/stream.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "../http/client_peer.h"
#include "client_impl.h"
#include "exchange.h"
#include "outbound/http/body_pipe.h"
#include "outbound/http/receive_window.h"
#include "outbound/rpc/client.h"
#include "wire/framing.h"
#include "wire/gzip.h"

namespace outbound::rpc {
namespace {

// Bytes of messages received and not read yet past which the server is
// asked for no more (ReceiveWindow): it may still send the stream's
// HTTP/2 window (1 MiB) before it waits. Half of it read, it may go on.
// A gzip-coded message waits as it came, and is decoded as it is read:
// what it inflates to is never held for a reader that has not come.
constexpr std::size_t kReadAhead = std::size_t{1} << 20;

// A message received and not read yet, as it came.
struct Unread {
  std::string bytes;
  bool compressed = false;
};

// What the core's thread and the caller's share: the messages received
// and not yet read, and the call's end.
struct Shared {
  Shared(std::size_t receive_limit, std::shared_ptr<outbound::internal::CancelState> call)
      : limit(receive_limit),
        cancel(std::move(call)),
        deframer(/*encoding=*/"", receive_limit, [this](std::string message, bool compressed) {
          std::unique_lock lock(mu);
          if (discarding) return;
          if (waiting_read) {
            // Straight to the read that waits: nothing is held back for it.
            auto read = std::exchange(waiting_read, nullptr);
            lock.unlock();
            read(Decode({std::move(message), compressed}));
            return;
          }
          unread_bytes += message.size();
          messages.push_back({std::move(message), compressed});
          if (unread_bytes > kReadAhead) window->Hold();
          changed.notify_all();
        }) {
    deframer.LeaveCompressed();
  }

  // The call has ended: a read that waits hears so.
  void End(Result<http::Response> answer, std::exception_ptr thrown_by) {
    std::function<void(std::optional<std::string>)> read;
    {
      std::lock_guard lock(mu);
      result = std::move(answer);
      thrown = thrown_by;
      // Read here, on the thread that feeds it: a ReadAsync handler that
      // cancels the call leaves a Feed that may go on to fail the rest of
      // its piece while the caller's Finish reads.
      framing = deframer.status();
      ended = true;
      read = std::exchange(waiting_read, nullptr);
      changed.notify_all();
    }
    if (read) read(std::nullopt);
  }

  // Takes the next unread message, if any, under `mu`: whether the window
  // may open now.
  bool Take(Unread& message) {
    message = std::move(messages.front());
    messages.pop_front();
    unread_bytes -= message.bytes.size();
    return unread_bytes <= kReadAhead / 2;
  }

  // The message as read: decoded if it came gzip-coded, outside `mu`. One
  // that does not decode (corrupt, or over the receive limit inflated)
  // ends the call with that status, as the Deframer's own checks do:
  // nothing then.
  std::optional<std::string> Decode(Unread message) {
    if (!message.compressed) return std::move(message.bytes);
    internal::StatusOr<std::string> decoded = internal::GzipDecompress(message.bytes, limit);
    if (decoded) return std::move(*decoded);
    {
      std::lock_guard lock(mu);
      if (!undecoded) undecoded = std::move(decoded).error();
    }
    cancel->Cancel();
    return std::nullopt;
  }

  const std::size_t limit;  // of a message, decoded
  // Cancels the call (the stream's own CancelSource's).
  const std::shared_ptr<outbound::internal::CancelState> cancel;
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Unread> messages;
  std::size_t unread_bytes = 0;  // of `messages`, as they came
  // Finish has begun: what comes now is dropped, and the window stays open
  // so the server can end the call.
  bool discarding = false;
  const std::shared_ptr<http::ReceiveWindow> window = std::make_shared<http::ReceiveWindow>();
  // Fed and read on the core's thread only.
  internal::Deframer deframer;
  bool ended = false;
  Status framing;  // the Deframer's status as the call ended
  // The first message read that did not decode (Decode): the call's status.
  std::optional<Status> undecoded;
  std::optional<Result<http::Response>> result;
  std::exception_ptr thrown;
  // A ReadAsync waiting for a message (none was unread when it came).
  std::function<void(std::optional<std::string>)> waiting_read;
};

}  // namespace

struct Stream::Impl {
  std::shared_ptr<Shared> shared;
  std::shared_ptr<http::BodyPipe> pipe;
  http::Client* core = nullptr;  // outlives the stream (stream.h)
  // Ends the call: the caller's cancel is forwarded to it, and the
  // destructor and a local end use it.
  CancelSource cancel;
  std::shared_ptr<outbound::internal::CancelState> caller_cancel;
  int forward_id = -1;
  std::size_t send_limit = 0;
  // Ended on this side (EndLocally), by the writer's thread (a message
  // that does not serialise) or the reader's (one that does not parse):
  // the status under shared->mu, set before the flag the other side reads.
  std::optional<Status> local;
  std::atomic<bool> ended_locally{false};
  bool writes_done = false;
  bool finished = false;
  Status status;
  Trailers trailers;
  Metadata headers;
  int attempts = 0;

  ~Impl() {
    if (!finished) cancel.Cancel();
    if (caller_cancel) caller_cancel->Forget(forward_id);
  }

  void WaitEnded(std::unique_lock<std::mutex>& lock) {
    shared->changed.wait(lock, [this] { return shared->ended; });
  }
};

Stream Client::OpenStream(std::string_view method, const Context& context) {
  Impl& client = *impl_;
  auto impl = std::make_unique<Stream::Impl>();
  impl->shared = std::make_shared<Shared>(client.receive_limit, impl->cancel.token());
  impl->pipe = std::make_shared<http::BodyPipe>();
  impl->send_limit = client.send_limit;
  impl->core = client.core.get();
  Context own = context;
  own.cancel = impl->cancel.token();
  if (context.cancel) {
    impl->caller_cancel = context.cancel;
    impl->forward_id = context.cancel->OnCancel([token = own.cancel] { token->Cancel(); });
  }
  internal::StatusOr<http::Request> made = internal::CallRequest(method, own, /*accept_gzip=*/true);
  if (!made) {
    // Bad metadata: nothing is sent, and the stream has ended already.
    impl->local = made.error();
    impl->ended_locally.store(true);
    impl->shared->End(tl::unexpected(Error(ErrorKind::kInvalidRequest, made.error().message)),
                      nullptr);
    return Stream(std::move(impl));
  }
  http::Request& request = *made;
  request.StreamBodyFromPipe(impl->pipe);
  std::shared_ptr<internal::Deframer> deframer(impl->shared, &impl->shared->deframer);
  request.StreamBodyTo(internal::DeframingSink(deframer), impl->shared->window)
      .OnBodyHead(internal::DeframingHead(deframer));
  // A pipe's call is sent again only while it opens, and only the
  // context's deadline bounds it once its headers are written
  // (outbound/http/body_pipe.h).
  client.Send(std::move(request), client.Idempotent(method),
              [shared = impl->shared](Result<http::Response> result, std::exception_ptr thrown) {
                shared->End(std::move(result), thrown);
              });
  return Stream(std::move(impl));
}

Stream::Stream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Stream::Stream(Stream&& other) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept = default;
Stream::~Stream() = default;

int Stream::attempts() const { return impl_ == nullptr ? 0 : impl_->attempts; }

bool Stream::Write(std::string_view message) {
  if (impl_ == nullptr || impl_->ended_locally.load() || impl_->writes_done) return false;
  internal::StatusOr<std::string> framed =
      internal::FrameForSending(message, impl_->send_limit, /*gzip=*/false);
  if (!framed) {
    EndLocally(std::move(framed.error()));
    return false;
  }
  return impl_->pipe->Write(*framed);
}

bool Stream::WritesDone() {
  if (impl_ == nullptr || impl_->ended_locally.load()) return false;
  // Asked before the half-close: once it is sent, a quick server may end
  // the stream before this returns, and that end is the answer to it.
  bool open;
  {
    std::lock_guard lock(impl_->shared->mu);
    open = !impl_->shared->ended;
  }
  if (!impl_->writes_done) {
    impl_->writes_done = true;
    impl_->pipe->Close();
  }
  return open;
}

bool Stream::Read(std::string* message) {
  if (impl_ == nullptr || impl_->ended_locally.load()) return false;
  Shared& shared = *impl_->shared;
  Unread taken;
  bool open;
  {
    std::unique_lock lock(shared.mu);
    if (shared.waiting_read) return false;  // a ReadAsync waits
    shared.changed.wait(lock, [&shared] { return !shared.messages.empty() || shared.ended; });
    if (shared.messages.empty() || shared.undecoded) return false;
    open = shared.Take(taken);
  }
  if (open) shared.window->Open();  // outside the lock: it wakes the client's loop
  std::optional<std::string> decoded = shared.Decode(std::move(taken));
  if (!decoded) return false;
  *message = std::move(*decoded);
  return true;
}

void Stream::ReadAsync(std::function<void(std::optional<std::string> message)> done) {
  if (impl_ == nullptr) return;
  std::optional<Unread> taken;  // what `done` is told at once, on the loop
  bool open = false;
  Shared& shared = *impl_->shared;
  if (!impl_->ended_locally.load()) {
    std::lock_guard lock(shared.mu);
    if (shared.undecoded) {
      // The call ends with it: `done` hears of no more.
    } else if (!shared.waiting_read && !shared.messages.empty()) {
      open = shared.Take(taken.emplace());
    } else if (!shared.waiting_read && !shared.ended && !shared.discarding) {
      shared.waiting_read = std::move(done);
      return;
    }
  }
  if (open) shared.window->Open();
  std::optional<std::string> now;
  if (taken) now = shared.Decode(std::move(*taken));
  http::internal::ClientPeer::Post(
      *impl_->core,
      [done = std::move(done), now = std::move(now)]() mutable { done(std::move(now)); });
}

Status Stream::Finish() {
  if (impl_ == nullptr) return Status{Code::kInternal, "the stream was moved from"};
  Impl& impl = *impl_;
  if (impl.finished) return impl.status;
  if (!impl.writes_done) {
    impl.writes_done = true;
    impl.pipe->Close();
  }
  std::exception_ptr thrown;
  std::optional<Status> local;
  {
    std::unique_lock lock(impl.shared->mu);
    impl.shared->discarding = true;
    impl.shared->messages.clear();
    impl.shared->unread_bytes = 0;
    lock.unlock();
    impl.shared->window->Open();
    lock.lock();
    impl.WaitEnded(lock);
    thrown = impl.shared->thrown;
    local = impl.local ? impl.local : impl.shared->undecoded;
  }
  impl.finished = true;
  const Result<http::Response>& result = *impl.shared->result;
  impl.attempts = result ? result->attempts : result.error().attempts();
  if (result) {
    impl.trailers = internal::TrailersOf(*result);
    impl.headers = internal::HeadersOf(*result);
  }
  if (local) {
    impl.status = *local;
  } else if (!impl.shared->framing.ok()) {
    // A malformed message ended the call (DeframingSink): the Deframer
    // has its exact code.
    impl.status = impl.shared->framing;
  } else {
    impl.status = internal::StatusOf(result);
  }
  if (thrown) std::rethrow_exception(thrown);
  return impl.status;
}

const Trailers& Stream::trailers() const {
  static const Trailers kNone;
  return impl_ == nullptr ? kNone : impl_->trailers;
}

const Metadata& Stream::headers() const {
  static const Metadata kNone;
  return impl_ == nullptr ? kNone : impl_->headers;
}

void Stream::EndLocally(Status status) {
  if (impl_ == nullptr) return;
  {
    std::lock_guard lock(impl_->shared->mu);
    // The other side's came first, or a message read did not decode.
    if (impl_->local || impl_->shared->undecoded) return;
    impl_->local = std::move(status);
    impl_->ended_locally.store(true);
  }
  impl_->cancel.Cancel();
}

}  // namespace outbound::rpc
