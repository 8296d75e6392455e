// SPDX-License-Identifier: Apache-2.0
// The kit's FakeTransport: the last attempt layer of a client, answering
// each attempt with the test's handler, in the Runtime's time.
#include "outbound/testing/fake_transport.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include "../http/attempt.h"
#include "../http/client_transport.h"
#include "../http/origin.h"
#include "../http/request_check.h"
#include "../http/transport_spec.h"
#include "outbound/internal/ascii.h"

namespace outbound::testing {

using http::internal::AttemptOutcome;
using http::internal::ClientTransport;
using http::internal::ExchangeEvents;
using http::internal::ExchangeRequest;

struct FakeTransport::State {
  State(Clock& c, Handler h) : clock(c), handler(std::move(h)) {}
  Clock& clock;
  const Handler handler;
  mutable std::mutex mu;
  std::vector<ServerRequest> requests;  // guarded by mu
  std::atomic<int> cancelled{0};
  std::atomic<std::uint64_t> connections{0};
};

namespace {

AttemptOutcome Failed(ErrorKind kind, std::string message) {
  AttemptOutcome outcome;
  outcome.result = Fail(kind, std::move(message));
  return outcome;
}

// The client's limits on a response body (Settings::max_response_bytes,
// max_error_response_bytes), and whose body it keeps at all
// (TransportSpec::body_wanted).
struct BodyLimits {
  std::size_t body;
  std::size_t error_body;
  http::internal::BodyWanted wanted;
};

std::string Lower(std::string text) { return outbound::internal::AsciiLowered(std::move(text)); }

// One exchange in flight: its events, its reply, and the timer of its next
// step. The events keep it (their canceller holds it) and it does not keep
// them: the client holds an attempt while it is in flight.
class FakeExchange final : public std::enable_shared_from_this<FakeExchange> {
 public:
  FakeExchange(std::shared_ptr<FakeTransport::State> state,
               const std::shared_ptr<ExchangeEvents>& events, const ExchangeRequest& what,
               Reply reply, BodyLimits limits)
      : state_(std::move(state)),
        attempt_(events),
        sink_(what.body_sink),
        head_sink_(what.body_head),
        reply_(std::move(reply)),
        limits_(limits) {}

  // Arms the canceller and the headers' delay timer (if the reply has
  // one), then calls `record`, then answers (unless the headers wait for
  // that timer). So a test that sees the request may move the clock at
  // once, and one that sees the timer fire also sees the request.
  template <typename Record>
  void Run(ExchangeEvents& attempt, Record record) {
    // Cancelled since Start launched it: not recorded, never answered (the
    // handler has run).
    if (!attempt.SetCanceller([self = shared_from_this()] { self->Cancelled(); })) return;
    {
      std::lock_guard lock(recording_);
      if (reply_.header_delay > Duration::zero()) {
        After(reply_.header_delay, [](FakeExchange& self) { self.Head(); });
      }
      record();
    }
    if (reply_.header_delay <= Duration::zero()) Head();
  }

 private:
  using Step = void (*)(FakeExchange&);

  void After(Duration delay, Step step) {
    std::lock_guard lock(mu_);
    if (done_) return;
    std::weak_ptr<FakeExchange> weak = weak_from_this();
    timer_ = state_->clock.ScheduleAfter(delay, [weak, step] {
      auto self = weak.lock();
      if (!self) return;
      { std::lock_guard recorded(self->recording_); }  // the request counts first
      if (!self->ended()) step(*self);
    });
  }

  void Cancelled() {
    {
      std::lock_guard lock(mu_);
      if (done_) return;
      done_ = true;
      timer_.Cancel();
    }
    state_->cancelled.fetch_add(1);
  }

  bool ended() {
    std::lock_guard lock(mu_);
    return done_;
  }

  bool Finished() {
    std::lock_guard lock(mu_);
    return std::exchange(done_, true);
  }

  void End(AttemptOutcome&& outcome) {
    if (Finished()) return;
    if (auto attempt = attempt_.lock()) attempt->End(std::move(outcome));
  }

  // What comes before the headers, then the headers.
  void Head() {
    using B = Reply::Behaviour;
    switch (reply_.behaviour) {
      case B::kHang:
        return;  // until the client cancels
      case B::kCloseBeforeHeaders:
      case B::kResetConnection: {
        AttemptOutcome outcome = Failed(ErrorKind::kTransport, "the connection was lost");
        outcome.connection = state_->connections.fetch_add(1) + 1;
        outcome.connection_lost = true;
        return End(std::move(outcome));
      }
      case B::kResetBeforeHeaders: {
        if (reply_.rst_code == 7) {  // REFUSED_STREAM: the server did nothing with it
          AttemptOutcome outcome = Failed(ErrorKind::kTransport, "the stream was refused");
          outcome.unprocessed = true;
          return End(std::move(outcome));
        }
        return End(Failed(ErrorKind::kTransport,
                          "the stream was reset (code " + std::to_string(reply_.rst_code) + ")"));
      }
      case B::kFrames:
        return End(Failed(ErrorKind::kInvalidRequest,
                          "a FakeTransport cannot write raw HTTP/2 frames: use a FakeServer"));
      default:
        break;
    }
    if (reply_.status_line) {
      return End(Failed(ErrorKind::kInvalidRequest,
                        "a FakeTransport cannot write a status line: use a FakeServer"));
    }
    response_.status = reply_.status;
    response_.version = "2";
    for (const auto& [name, value] : reply_.headers) response_.headers.Add(name, value);
    response_.received_at = state_->clock.WallNow();
    std::shared_ptr<ExchangeEvents> attempt = attempt_.lock();
    if (!attempt) return;
    TimePoint now = state_->clock.Now();
    attempt->HeadersArrived(now);
    dropped_ = limits_.wanted != nullptr && !limits_.wanted(response_);
    streams_ = sink_ != nullptr && response_.successful() && !dropped_;
    if (streams_) attempt->BodyStreaming(now);
    if (reply_.headers_only) return Done();  // HEADERS with END_STREAM: no body, no trailers
    Body();
  }

  // The body, as the reply says.
  void Body() {
    using B = Reply::Behaviour;
    const std::string& body = reply_.body;
    switch (reply_.behaviour) {
      case B::kTrickle:
        return Trickle();
      case B::kStall:
        Take(std::string_view(body).substr(0, reply_.cut_after));
        return;  // nothing more, until the client cancels
      case B::kResetMidBody:
      case B::kShortBody:
      case B::kTruncateChunked: {
        if (!Take(std::string_view(body).substr(0, reply_.cut_after))) return;
        AttemptOutcome outcome = Failed(ErrorKind::kTransport, "the body ended early");
        outcome.body_failed = true;
        outcome.body_streamed = streamed_;
        return End(std::move(outcome));
      }
      default:
        if (!Take(body)) return;
        return Done();
    }
  }

  void Trickle() {
    std::size_t piece = std::max<std::size_t>(reply_.trickle_bytes, 1);
    std::string_view rest = std::string_view(reply_.body).substr(sent_);
    if (!Take(rest.substr(0, piece))) return;
    sent_ += std::min(piece, rest.size());
    if (sent_ >= reply_.body.size()) return Done();
    After(reply_.trickle_every, [](FakeExchange& self) { self.Trickle(); });
  }

  // A piece of the body: to the call's sink, or into the response within
  // the client's limit, or dropped if the client does not want it. False
  // if the exchange ended on it.
  bool Take(std::string_view piece) {
    // The sink is the call's: only while the attempt (which holds the
    // call) lives.
    std::shared_ptr<ExchangeEvents> attempt = attempt_.lock();
    if (!attempt) return false;
    if (streams_) {
      if (piece.empty()) return true;
      if (!streamed_ && head_sink_ != nullptr && !ToHeadSink()) return false;
      if (!ToSink(piece)) return false;
      streamed_ = true;
      return true;
    }
    if (dropped_) {
      dropped_bytes_ += piece.size();
      if (dropped_bytes_ <= limits_.error_body) return true;
      AttemptOutcome outcome =
          Failed(ErrorKind::kResponseTooLarge,
                 "the response's body, which the client does not keep, is larger than " +
                     std::to_string(limits_.error_body) + " bytes");
      outcome.body_failed = true;
      End(std::move(outcome));
      return false;
    }
    bool error = response_.status >= 400;
    std::size_t limit = error ? std::min(limits_.body, limits_.error_body) : limits_.body;
    if (response_.body.size() + piece.size() > limit) {
      AttemptOutcome outcome =
          Failed(ErrorKind::kResponseTooLarge,
                 std::string("the response's ") + (error ? "error answer's " : "") +
                     "body is larger than " + std::to_string(limit) + " bytes");
      outcome.body_failed = true;
      End(std::move(outcome));
      return false;
    }
    response_.body.append(piece);
    return true;
  }

  // Hands the sink a piece, or the body's end (empty), as the transports
  // do (BodySink): only while the attempt (which holds the call and its
  // sink) lives and has not ended. False if the exchange ended.
  bool ToSink(std::string_view piece) {
    std::shared_ptr<ExchangeEvents> attempt = attempt_.lock();
    if (!attempt || ended()) return false;
    Result<bool> answer = false;
    try {
      answer = (*sink_)(piece);
    } catch (...) {
      return SinkThrew("body sink");
    }
    if (answer && *answer) return true;
    AttemptOutcome outcome;
    if (answer) {
      outcome = Failed(ErrorKind::kCancelled, "the caller stopped reading the body");
    } else {
      outcome.result = tl::unexpected(std::move(answer.error()));
      outcome.body_failed = true;
      streamed_ = true;  // a body found bad is final
    }
    outcome.body_streamed = streamed_;
    End(std::move(outcome));
    return false;
  }

  // Hands the head sink the answer about to stream, as the transports do
  // (BodyHeadSink). False if the exchange ended: refused is final.
  bool ToHeadSink() {
    std::shared_ptr<ExchangeEvents> attempt = attempt_.lock();
    if (!attempt || ended()) return false;
    Result<void> heard;
    try {
      heard = (*head_sink_)(response_);
    } catch (...) {
      return SinkThrew("body head sink");
    }
    if (heard) return true;
    AttemptOutcome outcome;
    outcome.result = tl::unexpected(std::move(heard.error()));
    outcome.body_failed = true;
    streamed_ = true;
    outcome.body_streamed = true;
    End(std::move(outcome));
    return false;
  }

  // The caller's sink threw (called inside the catch), as the transports
  // take it: the exchange ends, final, the exception the call's `thrown`.
  bool SinkThrew(std::string_view which) {
    AttemptOutcome outcome =
        Failed(ErrorKind::kCancelled, "the caller's " + std::string(which) + " threw");
    outcome.thrown = std::current_exception();
    streamed_ = true;
    outcome.body_streamed = true;
    End(std::move(outcome));
    return false;
  }

  void Done() {
    if (!reply_.headers_only) {  // the trailers' HEADERS frame, after the body
      for (const auto& [name, value] : reply_.trailers) response_.trailers.Add(name, value);
    }
    if (streamed_ && !ToSink(std::string_view("", 0))) return;
    AttemptOutcome outcome;
    outcome.body_streamed = streamed_;
    outcome.result = std::move(response_);
    End(std::move(outcome));
  }

  std::shared_ptr<FakeTransport::State> state_;
  std::weak_ptr<ExchangeEvents> attempt_;
  // The call's body sink (null: none), valid while the attempt lives.
  const http::BodySink* sink_;
  const http::BodyHeadSink* head_sink_;
  Reply reply_;
  BodyLimits limits_;
  http::Response response_;
  bool streams_ = false;
  bool dropped_ = false;  // the client does not want the body (BodyLimits::wanted)
  std::size_t dropped_bytes_ = 0;
  bool streamed_ = false;
  std::size_t sent_ = 0;
  std::mutex recording_;  // held while the request is recorded
  std::mutex mu_;
  bool done_ = false;  // guarded by mu_
  Timer timer_;        // guarded by mu_
};

class FakeClientTransport final : public ClientTransport {
 public:
  FakeClientTransport(std::shared_ptr<FakeTransport::State> state, BodyLimits limits)
      : state_(std::move(state)), limits_(limits) {}

  void Start(std::shared_ptr<ExchangeEvents> attempt, const ExchangeRequest& what) override {
    if (!attempt->Launch()) {
      attempt->End(attempt->CancelledOutcome());
      return;
    }
    TimePoint now = state_->clock.Now();
    const http::internal::Admission* admission = what.admission;
    if (admission != nullptr && !admission->StillAdmitted(now)) {
      attempt->End(Failed(ErrorKind::kRejected,
                          "the circuit breaker opened before the attempt was sent: nothing was "
                          "sent"));
      return;
    }
    if (!attempt->Sent(now)) {
      attempt->End(attempt->CancelledOutcome());
      return;
    }
    attempt->Writing();
    auto request = Received(what);
    if (!request) {
      AttemptOutcome outcome;
      outcome.result = tl::unexpected(request.error());
      outcome.cannot_improve = true;
      attempt->End(std::move(outcome));
      return;
    }
    if (what.request->body_source) attempt->RequestBodySent(state_->clock.Now());
    Reply reply = state_->handler(*request);
    auto exchange =
        std::make_shared<FakeExchange>(state_, attempt, what, std::move(reply), limits_);
    exchange->Run(*attempt, [&] {
      std::lock_guard lock(state_->mu);
      state_->requests.push_back(std::move(*request));
    });
  }

  // No connection to open: always ready.
  void Warm(TimePoint, std::function<void(Result<void>)> ready) override { ready({}); }
  bool Connected() const override { return true; }

 private:
  // The request as a server would receive it.
  static Result<ServerRequest> Received(const ExchangeRequest& what) {
    const http::internal::CallRequest& sent = *what.request;
    const http::internal::AttemptFields& own = *what.attempt_headers;
    ServerRequest request;
    request.method = sent.method;
    std::size_t scheme = sent.url.find("://");
    std::size_t path = sent.url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    request.target = path == std::string::npos ? "/" : sent.url.substr(path);
    request.version = "2";
    // As FakeServer records an HTTP/2 request: :scheme, and :authority as
    // its first field, host.
    if (auto url = http::internal::ParseUrl(sent.url)) {
      request.scheme = url->origin.scheme;
      request.headers.emplace_back("host", url->origin.Authority());
    }
    // Then in the transports' order: the attempt's own fields, the
    // request's that they do not replace, then the default user-agent for
    // a request that names none.
    for (const auto& [name, value] : own) {
      request.headers.emplace_back(Lower(std::string(name)), std::string(value));
    }
    for (const auto& header : sent.headers) {
      // Not a structured binding: clang 14 cannot capture one in a lambda.
      const std::string name = Lower(header.first);
      bool replaced = std::any_of(own.begin(), own.end(), [&](const auto& h) {
        return Lower(std::string(h.name)) == name;
      });
      if (!replaced) request.headers.emplace_back(name, header.second);
    }
    if (sent.default_user_agent) {
      request.headers.emplace_back("user-agent", http::internal::kDefaultUserAgent);
    }
    if (!sent.body_source) {
      request.body = sent.body;
      return request;
    }
    http::BodyReader read = sent.body_source.open();
    char buffer[16 * 1024];
    for (;;) {
      Result<std::size_t> n = read(std::span<char>(buffer, sizeof buffer));
      if (!n) return Fail(ErrorKind::kInvalidRequest, n.error().message());
      if (*n == 0) break;
      request.body.append(buffer, *n);
    }
    return request;
  }

  std::shared_ptr<FakeTransport::State> state_;
  BodyLimits limits_;
};

}  // namespace

FakeTransport::FakeTransport(Clock& clock, Handler handler)
    : state_(std::make_shared<State>(clock, std::move(handler))) {}

FakeTransport::~FakeTransport() = default;

std::vector<ServerRequest> FakeTransport::requests() const {
  std::lock_guard lock(state_->mu);
  return state_->requests;
}

std::size_t FakeTransport::request_count() const {
  std::lock_guard lock(state_->mu);
  return state_->requests.size();
}

int FakeTransport::cancelled() const { return state_->cancelled.load(); }

std::unique_ptr<ClientTransport> FakeTransport::CarryFor(
    const http::internal::TransportSpec& spec) {
  return std::make_unique<FakeClientTransport>(
      state_, BodyLimits{spec.settings.max_response_bytes, spec.settings.max_error_response_bytes,
                         spec.body_wanted});
}

}  // namespace outbound::testing
