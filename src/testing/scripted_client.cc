// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/scripted_client.h"

#include <exception>

namespace outbound::testing {

http::Response Respond(int status, std::string body, http::ResponseHeaders headers) {
  http::Response response;
  response.status = status;
  response.body = std::move(body);
  response.headers = std::move(headers);
  response.version = "1.1";
  response.attempts = 1;
  return response;
}

ScriptedClient::ScriptedClient(Handler handler)
    : handler_(std::move(handler)), thread_([this] { Run(); }) {}

ScriptedClient::~ScriptedClient() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ScriptedClient::SendAsync(http::Request request, Callback done) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(Call{std::move(request), std::move(done)});
  }
  wake_.notify_one();
}

std::vector<http::Request> ScriptedClient::requests() const {
  std::lock_guard lock(mu_);
  return answered_;
}

std::size_t ScriptedClient::request_count() const {
  std::lock_guard lock(mu_);
  return answered_.size();
}

namespace {

// A streamed request body, read whole into `body`, as a handler reads a
// request's body; the source is cleared.
Result<void> ReadStreamedBody(http::Request& request) {
  http::BodyReader reader = request.body_source.open();
  std::string piece(16 * 1024, '\0');
  for (;;) {
    Result<std::size_t> n = reader(piece);
    if (!n) {
      return tl::unexpected(Error(ErrorKind::kInvalidRequest,
                                  "the request body's reader failed: " + n.error().message()));
    }
    if (*n == 0) break;
    request.body.append(piece, 0, *n);
  }
  request.body_source = {};
  return {};
}

}  // namespace

void ScriptedClient::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Call call = std::move(queue_.front());
    queue_.pop_front();
    if (stopping_) {
      lock.unlock();
      call.done(tl::unexpected(Error(ErrorKind::kCancelled,
                                     "the ScriptedClient was destroyed with the call queued")),
                nullptr);
      lock.lock();
      continue;
    }
    lock.unlock();
    // Recorded, and handed to the handler, with a streamed body read whole.
    Result<void> read;
    try {
      if (call.request.body_source) read = ReadStreamedBody(call.request);
    } catch (...) {  // as a Client takes a reader's throw
      read = tl::unexpected(Error(ErrorKind::kInvalidRequest, "the request body's reader threw"));
    }
    lock.lock();
    answered_.push_back(call.request);
    lock.unlock();
    if (read) {
      Answer(call);
    } else {
      call.done(tl::unexpected(read.error()), nullptr);
    }
    lock.lock();
  }
}

void ScriptedClient::Answer(Call& call) {
  Result<http::Response> result;
  try {
    result = handler_(call.request);
  } catch (...) {
    // As a classify function's throw reaches a Client's caller.
    call.done(tl::unexpected(Error(ErrorKind::kTransport, "the handler threw")),
              std::current_exception());
    return;
  }
  if (result && result->attempts == 0) result->attempts = 1;
  if (result && call.request.body_sink && result->successful()) {
    std::string body = std::move(result->body);
    result->body.clear();
    // The body in one piece, then its end, as a transport hands them (a
    // sink given nothing hears no end).
    Result<bool> answer = true;
    if (!body.empty() && call.request.body_head) {
      // The head alone: its trailers come after the body.
      http::Response head = *result;
      head.trailers = {};
      Result<void> heard = call.request.body_head(head);
      if (!heard) answer = tl::unexpected(std::move(heard.error()));
    }
    if (!body.empty() && answer) answer = call.request.body_sink(body);
    if (!body.empty() && answer && *answer) {
      answer = call.request.body_sink(std::string_view("", 0));
    }
    if (!answer) {
      result = tl::unexpected(std::move(answer.error()));
    } else if (!*answer) {
      result = tl::unexpected(Error(ErrorKind::kCancelled, "the caller stopped reading the body"));
    }
  }
  call.done(std::move(result), nullptr);
}

namespace {

// Forwards to a ScriptedClient the test owns.
class Handle final : public http::Sender {
 public:
  explicit Handle(ScriptedClient& target) : target_(target) {}
  using Sender::SendAsync;
  void SendAsync(http::Request request, Callback done) override {
    target_.SendAsync(std::move(request), std::move(done));
  }

 private:
  ScriptedClient& target_;
};

}  // namespace

std::unique_ptr<http::Sender> ScriptedClient::handle() { return std::make_unique<Handle>(*this); }

}  // namespace outbound::testing
