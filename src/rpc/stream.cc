// SPDX-License-Identifier: Apache-2.0
// A client-streaming or bidirectional call (outbound/rpc/stream.h): its
// opening is an attempt of the client's loop, retried like a unary one;
// once open it is never sent again, and its end settles the breaker ticket
// it took. One completion queue per stream, driven by whichever of the
// caller's threads waits on it.
#include "outbound/rpc/stream.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "call_parts.h"
#include "client_impl.h"
#include "outbound/rpc/client.h"

namespace outbound::rpc {

using internal::AttemptState;
using internal::CancelHook;
using internal::Cancelled;
using internal::OpeningBound;
using internal::ReadTrailers;
using internal::ToByteBuffer;
using internal::ToString;

namespace {

// A stream's completion queue, waited on by whichever of the stream's
// threads needs a result (a reader and a writer may wait at once): the
// thread that polls records what the others wait for and wakes them. So a
// stream costs no thread of its own.
class Completions {
 public:
  Completions() = default;
  // Every operation started on the queue must have been waited for.
  ~Completions() {
    queue_.Shutdown();
    void* tag;
    bool ok;
    while (queue_.Next(&tag, &ok)) {
    }
  }
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  grpc::CompletionQueue* queue() { return &queue_; }

  // Blocks until the operation started with `tag` completes; its ok.
  bool Wait(const void* tag) {
    std::unique_lock lock(mu_);
    for (;;) {
      auto it = std::find_if(done_.begin(), done_.end(),
                             [tag](const auto& entry) { return entry.first == tag; });
      if (it != done_.end()) {
        bool ok = it->second;
        done_.erase(it);
        return ok;
      }
      if (polling_) {
        cv_.wait(lock);
        continue;
      }
      polling_ = true;
      lock.unlock();
      void* got = nullptr;
      bool ok = false;
      bool alive = queue_.Next(&got, &ok);
      lock.lock();
      polling_ = false;
      if (alive) done_.emplace_back(got, ok);
      cv_.notify_all();
      if (!alive) return false;  // not reached: the queue shuts down in the destructor
    }
  }

 private:
  grpc::CompletionQueue queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool polling_ = false;
  std::vector<std::pair<const void*, bool>> done_;
};

}  // namespace

// An open stream's call, or the status of one that never opened.
struct Stream::Impl {
  Impl(Client::Impl& owner, std::string name, const Context& caller)
      : client(&owner), method(std::move(name)), context(caller) {}
  ~Impl() {
    if (!finished) End(/*abandoned=*/true);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Starts the call and waits until its headers are sent (ok), it failed,
  // or open_by passed.
  Status Open(grpc::GenericStub& stub, std::optional<TimePoint> open_by) {
    call = stub.PrepareCall(&cc->grpc(), method, completions.queue());
    if (call == nullptr) return Status{Code::kInternal, "gRPC did not prepare the call"};
    hook = std::make_unique<CancelHook>(context, [cc = cc] { cc->TryCancel(); });
    OpeningBound bound(*client->runtime.clock, open_by, cc);
    call->StartCall(&start_tag);
    if (completions.Wait(&start_tag) && bound.Opened()) return Status{};
    grpc::Status failed;
    call->Finish(&failed, &finish_tag);
    completions.Wait(&finish_tag);
    call.reset();
    finished = true;  // nothing of it is left to end
    return bound.expired() ? OpeningBound::Expired() : cc->Ended(failed);
  }

  void EndLocally(Status why) {
    {
      std::lock_guard lock(mu);
      if (!local) local = std::move(why);
    }
    if (cc) cc->TryCancel();
  }

  // Ends the call, once: cancelled when abandoned, else half-closed and read
  // to its end; then settles the ticket and ends the span.
  Status End(bool abandoned) {
    finished = true;
    if (call == nullptr) return status;  // it never opened
    bool ended_locally = false;
    {
      std::lock_guard lock(mu);
      ended_locally = local.has_value();
    }
    if (abandoned || ended_locally) {
      cc->TryCancel();
    } else {
      if (!writes_done) {
        call->WritesDone(&write_tag);
        completions.Wait(&write_tag);
        writes_done = true;
      }
      grpc::ByteBuffer unread;
      while (!read_done) {
        call->Read(&unread, &read_tag);
        read_done = !completions.Wait(&read_tag);
      }
    }
    grpc::Status final_status;
    call->Finish(&final_status, &finish_tag);
    completions.Wait(&finish_tag);
    ReadTrailers(cc->grpc(), trailers);
    {
      std::lock_guard lock(mu);
      status = local ? *local : cc->Ended(final_status);
    }
    Client::Impl& owner = *client;
    owner.EndSpan(span.get(), status);
    owner.RecordCall(method, status, owner.runtime.clock->Now() - start);
    circuit::Outcome outcome = circuit::Outcome::kIgnored;
    if (!abandoned && !ended_locally && !Cancelled(context)) {
      // May throw: the ticket stays unsettled and frees its slot when the
      // stream goes.
      outcome = owner.settings.classify(method, status, trailers).breaker;
    }
    owner.Settle(*ticket, outcome, context.trace);
    return status;
  }

  Client::Impl* client;
  const std::string method;
  const Context context;
  TimePoint start;
  int attempts = 0;

  // Destroyed last: the call below holds the queue until it goes.
  Completions completions;
  std::shared_ptr<internal::AttemptContext> cc;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call;  // null unless open
  std::unique_ptr<CancelHook> hook;
  std::optional<circuit::Ticket> ticket;
  std::unique_ptr<telemetry::Span> span;
  // One operation of each kind at a time (a writer, a reader, Finish), so a
  // tag per kind.
  char start_tag = 0, write_tag = 0, read_tag = 0, finish_tag = 0;

  bool writes_done = false;  // the writer's
  bool read_done = false;    // the reader's
  bool finished = false;     // Finish's or the destructor's
  std::mutex mu;
  std::optional<Status> local;  // why the client ended the stream itself
  Status status;
  Trailers trailers;
};

Stream Client::OpenStream(std::string_view method_view, const Context& context) {
  internal::BlockingCall blocking(*impl_);
  const std::string method(method_view);
  TimePoint start = impl_->runtime.clock->Now();
  std::unique_ptr<Stream::Impl> opened;
  Reply reply = impl_->Run(method, context, /*stream=*/true, blocking, [&](AttemptState& attempt) {
    return impl_->SendOpen(method, context, attempt, opened);
  });
  if (opened == nullptr) {  // it never opened: a stream that only reports why
    impl_->RecordCall(method, reply.status, impl_->runtime.clock->Now() - start);
    opened = std::make_unique<Stream::Impl>(*impl_, method, context);
    opened->status = std::move(reply.status);
    opened->trailers = std::move(reply.trailers);
  }
  opened->start = start;
  opened->attempts = reply.attempts;
  return Stream(std::move(opened));
}

Status Client::Impl::SendOpen(const std::string& method, const Context& context,
                              AttemptState& attempt, std::unique_ptr<Stream::Impl>& opened) {
  if (!stub) return NoRoute();
  auto stream = std::make_unique<Stream::Impl>(*this, method, context);
  stream->cc = NewContext(attempt, context);
  Status status = stream->Open(*stub, attempt.open_by);
  if (!status.ok()) {
    ReadTrailers(stream->cc->grpc(), attempt.trailers);
    return status;
  }
  stream->ticket.emplace(std::move(attempt.ticket));
  stream->span = std::move(attempt.span);
  attempt.opened = true;
  opened = std::move(stream);
  return status;
}

Stream::Stream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Stream::Stream(Stream&& other) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept = default;
Stream::~Stream() = default;

bool Stream::opened() const { return impl_ != nullptr && impl_->call != nullptr; }

int Stream::attempts() const { return impl_ ? impl_->attempts : 0; }

bool Stream::Write(std::string_view message) {
  if (!opened() || impl_->finished || impl_->writes_done) return false;
  grpc::ByteBuffer buffer = ToByteBuffer(message);
  impl_->call->Write(buffer, &impl_->write_tag);
  return impl_->completions.Wait(&impl_->write_tag);
}

bool Stream::WritesDone() {
  if (!opened() || impl_->finished || impl_->writes_done) return false;
  impl_->call->WritesDone(&impl_->write_tag);
  impl_->writes_done = true;
  return impl_->completions.Wait(&impl_->write_tag);
}

bool Stream::Read(std::string* message) {
  if (!opened() || impl_->finished || impl_->read_done) return false;
  grpc::ByteBuffer buffer;
  impl_->call->Read(&buffer, &impl_->read_tag);
  if (!impl_->completions.Wait(&impl_->read_tag)) {
    impl_->read_done = true;
    return false;
  }
  *message = ToString(buffer);
  return true;
}

Status Stream::Finish() {
  if (impl_ == nullptr) return Status{Code::kInternal, "the stream was moved from"};
  if (impl_->finished) return impl_->status;
  return impl_->End(/*abandoned=*/false);
}

const Trailers& Stream::trailers() const {
  static const Trailers kNone;
  return impl_ ? impl_->trailers : kNone;
}

void Stream::EndLocally(Status status) {
  if (impl_ != nullptr) impl_->EndLocally(std::move(status));
}

}  // namespace outbound::rpc
