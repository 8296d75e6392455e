// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <utility>

#include "body_pipe_link.h"

namespace outbound::http {
namespace {

// The taken front of the buffer is dropped once it is at least this large
// and at least half the buffer: amortised, with no copy per Take.
constexpr std::size_t kCompactBytes = std::size_t{16} * 1024;

}  // namespace

BodyPipe::BodyPipe(std::size_t bound) : bound_(std::max<std::size_t>(bound, 1)) {}

BodyPipe::~BodyPipe() = default;

bool BodyPipe::Write(std::string_view bytes) {
  std::lock_guard writing(write_mu_);
  std::function<void()> wake;
  {
    std::unique_lock lock(mu_);
    // On the loop, a wait would hold the very thread that frees room: what
    // does not fit now is refused whole.
    if (on_loop_ && on_loop_() && buffer_.size() - taken_ + bytes.size() > bound_) return false;
    while (!bytes.empty()) {
      if (ended_ || closed_) return false;
      std::size_t held = buffer_.size() - taken_;
      if (held >= bound_) {
        changed_.wait(lock);
        continue;
      }
      std::size_t n = std::min(bytes.size(), bound_ - held);
      buffer_.append(bytes.data(), n);
      bytes.remove_prefix(n);
      changed_.notify_all();  // a reader off the loop (TakeWaiting)
      if (std::exchange(transport_waiting_, false)) {
        wake = wake_;
        if (!bytes.empty()) {
          // Woken now, not after the whole Write: the transport frees the
          // room the rest waits for.
          lock.unlock();
          wake();
          wake = nullptr;
          lock.lock();
        }
      }
    }
  }
  if (wake) wake();
  return true;
}

void BodyPipe::Close() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    if (closed_ || ended_) return;
    closed_ = true;
    changed_.notify_all();
    if (std::exchange(transport_waiting_, false)) wake = wake_;
  }
  if (wake) wake();
}

std::size_t BodyPipe::buffered() const {
  std::lock_guard lock(mu_);
  return buffer_.size() - taken_;
}

bool BodyPipe::ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

namespace internal {

bool PipeLink::Claim(BodyPipe& pipe) {
  std::lock_guard lock(pipe.mu_);
  return !std::exchange(pipe.claimed_, true);
}

bool PipeLink::Attach(BodyPipe& pipe, std::function<void()> wake, std::function<bool()> on_loop) {
  std::lock_guard lock(pipe.mu_);
  if (pipe.ended_) return false;
  pipe.wake_ = std::move(wake);
  pipe.on_loop_ = std::move(on_loop);
  return true;
}

PipeLink::Taken PipeLink::Take(BodyPipe& pipe, std::span<char> buffer) {
  std::lock_guard lock(pipe.mu_);
  Taken taken;
  std::size_t held = pipe.buffer_.size() - pipe.taken_;
  taken.size = std::min(buffer.size(), held);
  std::copy_n(pipe.buffer_.data() + pipe.taken_, taken.size, buffer.data());
  Took(pipe, taken.size);
  taken.end = pipe.closed_ && pipe.taken_ == pipe.buffer_.size();
  // Checked and marked under the lock a Write appends under: a Write
  // after this sees the mark and wakes the transport; none is lost.
  if (taken.size == 0 && !taken.end) pipe.transport_waiting_ = true;
  if (taken.size > 0) pipe.changed_.notify_all();  // room for a blocked Write
  return taken;
}

Result<std::size_t> PipeLink::TakeWaiting(BodyPipe& pipe, std::span<char> buffer) {
  std::unique_lock lock(pipe.mu_);
  pipe.changed_.wait(
      lock, [&] { return pipe.ended_ || pipe.closed_ || pipe.buffer_.size() > pipe.taken_; });
  if (pipe.ended_) return Fail(ErrorKind::kCancelled, "the body pipe's exchange has ended");
  std::size_t n = std::min(buffer.size(), pipe.buffer_.size() - pipe.taken_);
  std::copy_n(pipe.buffer_.data() + pipe.taken_, n, buffer.data());
  Took(pipe, n);
  pipe.changed_.notify_all();
  return n;
}

void PipeLink::Took(BodyPipe& pipe, std::size_t n) {
  pipe.taken_ += n;
  if (pipe.taken_ > BodyPipe::kReplayBytes) pipe.replayable_ = false;
  if (pipe.replayable_) return;  // all of it is kept for another attempt
  if (pipe.taken_ == pipe.buffer_.size()) {
    pipe.buffer_.clear();
    pipe.taken_ = 0;
  } else if (pipe.taken_ >= kCompactBytes && pipe.taken_ * 2 >= pipe.buffer_.size()) {
    pipe.buffer_.erase(0, pipe.taken_);
    pipe.taken_ = 0;
  }
}

void PipeLink::Detach(BodyPipe& pipe) {
  std::function<void()> wake;
  std::function<bool()> on_loop;
  {
    std::lock_guard lock(pipe.mu_);
    pipe.transport_waiting_ = false;
    wake.swap(pipe.wake_);
    on_loop.swap(pipe.on_loop_);
  }
  // `wake` and `on_loop` go here, outside the lock.
}

bool PipeLink::Rewind(BodyPipe& pipe) {
  std::lock_guard lock(pipe.mu_);
  if (!pipe.replayable_ || pipe.ended_) return false;
  pipe.taken_ = 0;
  return true;
}

void PipeLink::Commit(BodyPipe& pipe) {
  std::lock_guard lock(pipe.mu_);
  if (!pipe.replayable_) return;
  pipe.replayable_ = false;
  pipe.buffer_.erase(0, pipe.taken_);
  pipe.taken_ = 0;
}

void PipeLink::Finish(BodyPipe& pipe) {
  std::function<void()> wake;
  std::function<bool()> on_loop;
  {
    std::lock_guard lock(pipe.mu_);
    pipe.ended_ = true;
    pipe.transport_waiting_ = false;
    pipe.buffer_.clear();
    pipe.buffer_.shrink_to_fit();
    pipe.taken_ = 0;
    wake.swap(pipe.wake_);
    on_loop.swap(pipe.on_loop_);
    pipe.changed_.notify_all();
  }
  // `wake` and `on_loop` go here, outside the lock.
}

}  // namespace internal
}  // namespace outbound::http
