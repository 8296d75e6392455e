// SPDX-License-Identifier: Apache-2.0
// Client-streaming and bidirectional streams (Client::OpenStream) over the
// library's own HTTP/2, against real grpc++ servers on loopback. Deadlines
// run on the fixture's ManualClock.
#include "outbound/rpc/stream.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "echo_server.h"
#include "methods.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/black_hole.h"

namespace outbound::rpc {
namespace {

using ChatStream = grpc::ServerReaderWriter<EchoReply, EchoRequest>;

EchoRequest Text(const std::string& text) {
  EchoRequest request;
  request.set_text(text);
  return request;
}

// Echoes each message of a Chat, in order, until the client half-closes.
grpc::Status EchoEach(int, grpc::ServerContext*, ChatStream* stream) {
  EchoRequest request;
  while (stream->Read(&request)) {
    EchoReply reply;
    reply.set_text("echo: " + request.text());
    stream->Write(reply);
  }
  return grpc::Status::OK;
}

// A classify that calls every status a retryable failure, and counts the
// statuses it was asked about: what the client decides itself (a cancel, a
// stream dropped) must never reach it.
struct FailEverything {
  std::atomic<int> asked{0};
  Classify classify() {
    return [this](std::string_view, const Status& status, const Trailers&) {
      ++asked;
      if (status.ok()) return Classification{retry::Outcome::kSuccess};
      return Classification{retry::Outcome::kRetry, Duration::zero(), circuit::Outcome::kFailure};
    };
  }
};

class RpcStream : public RpcClient {};

TEST_F(RpcStream, AClientStreamsMessagesAllReachTheServerAndItsOneReplyReturns) {
  EchoServer server(Echoing());
  server.service().collect = [](int, grpc::ServerContext*, grpc::ServerReader<EchoRequest>* reader,
                                EchoReply* reply) {
    EchoRequest request;
    std::string all;
    while (reader->Read(&request)) all += request.text() + ";";
    reply->set_text(all);
    return grpc::Status::OK;
  };
  auto client = Make(server);
  Stream stream = client->OpenStream(kCollect);
  for (const char* text : {"a", "b", "c"}) EXPECT_TRUE(stream.Write(Text(text)));
  EXPECT_TRUE(stream.WritesDone());
  EchoReply reply;
  ASSERT_TRUE(stream.Read(&reply));
  EXPECT_EQ(reply.text(), "a;b;c;");
  EXPECT_FALSE(stream.Read(&reply));
  Status status = stream.Finish();
  EXPECT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(stream.attempts(), 1);
  EXPECT_EQ(server.service().collect_calls(), 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).successes, 1);
}

TEST_F(RpcStream, FinishHalfClosesAClientStreamAndDiscardsItsReply) {
  std::mutex mu;
  std::vector<std::string> seen;
  EchoServer server(Echoing());
  server.service().collect = [&](int, grpc::ServerContext*, grpc::ServerReader<EchoRequest>* reader,
                                 EchoReply* reply) {
    EchoRequest request;
    while (reader->Read(&request)) {
      std::lock_guard lock(mu);
      seen.push_back(request.text());
    }
    reply->set_text("done");
    return grpc::Status::OK;
  };
  auto client = Make(server);
  Stream stream = client->OpenStream(kCollect);
  EXPECT_TRUE(stream.Write(Text("x")));
  EXPECT_TRUE(stream.Write(Text("y")));
  Status status = stream.Finish();  // no WritesDone, no Read: Finish does both
  EXPECT_TRUE(status.ok()) << status.message;
  std::lock_guard lock(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"x", "y"}));
}

TEST_F(RpcStream, ABidiStreamEchoesInOrder) {
  EchoServer server(Echoing());
  server.service().chat = EchoEach;
  auto client = Make(server);
  Stream stream = client->OpenStream(kChat);
  EchoReply reply;
  for (const char* text : {"one", "two", "three"}) {
    ASSERT_TRUE(stream.Write(Text(text)));
    ASSERT_TRUE(stream.Read(&reply));
    EXPECT_EQ(reply.text(), std::string("echo: ") + text);
  }
  EXPECT_TRUE(stream.WritesDone());
  EXPECT_FALSE(stream.Read(&reply));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_EQ(client->breaker().counts(clock_.Now()).successes, 1);
}

TEST_F(RpcStream, OneThreadWritesWhileAnotherReads) {
  EchoServer server(Echoing());
  server.service().chat = EchoEach;
  auto client = Make(server);
  Stream stream = client->OpenStream(kChat);
  constexpr int kMessages = 200;
  std::thread writer([&] {
    for (int i = 0; i < kMessages; ++i) ASSERT_TRUE(stream.Write(Text(std::to_string(i))));
    EXPECT_TRUE(stream.WritesDone());
  });
  std::vector<std::string> got;
  std::string bytes;
  while (stream.Read(&bytes)) {  // the bytes form
    EchoReply reply;
    ASSERT_TRUE(reply.ParseFromString(bytes));
    got.push_back(reply.text());
  }
  writer.join();
  EXPECT_TRUE(stream.Finish().ok());
  ASSERT_EQ(got.size(), std::size_t{kMessages});
  for (int i = 0; i < kMessages; ++i) EXPECT_EQ(got[i], "echo: " + std::to_string(i));
}

// gzip-coded answers wait as they came, and each is decoded as it is read:
// a stream whose answers all came before they were read holds their coded
// bytes, not what they inflate to. 160 answers of 1 MiB of one byte (a few
// KiB each coded, all within the stream's window) were held decoded: 160
// MiB, where the server's own client (grpc-go, grpc++) holds a few.
TEST_F(RpcStream, GzipCodedAnswersWaitCodedUntilTheyAreRead) {
  constexpr int kAnswers = 160;
  const std::string big(std::size_t{1} << 20, 'a');
  std::promise<void> all_written;
  EchoServer server(Echoing());
  server.service().chat = [&](int, grpc::ServerContext* context, ChatStream* stream) {
    context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    EchoRequest request;
    stream->Read(&request);
    EchoReply reply;
    reply.set_text(big);
    for (int i = 0; i < kAnswers; ++i) stream->Write(reply);
    all_written.set_value();
    return grpc::Status::OK;
  };
  auto client = Make(server);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  long before = usage.ru_maxrss;
  Stream stream = client->OpenStream(kChat);
  ASSERT_TRUE(stream.Write(Text("go")));
  EchoReply reply;
  ASSERT_TRUE(stream.Read(&reply));
  all_written.get_future().wait();
  int read = 1;
  bool whole = reply.text() == big;
  while (stream.Read(&reply)) {
    ++read;
    whole = whole && reply.text() == big;
  }
  EXPECT_TRUE(stream.Finish().ok());
  getrusage(RUSAGE_SELF, &usage);
  long grown = usage.ru_maxrss - before;
  EXPECT_EQ(read, kAnswers);
  EXPECT_TRUE(whole);
  std::printf("%d gzip-coded answers of 1 MiB read: peak RSS grew by %ld KiB\n", kAnswers, grown);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LT(grown, 40 * 1024) << "KiB";  // freed answers stay resident in a sanitizer's quarantine
#endif
}

// A stream is sent once: its bytes cannot be written twice. With nothing
// listening it ends UNAVAILABLE, one failure for the breaker; a write
// after that is refused.
// Nothing of the stream reached a server: it opens again as a unary call
// of its method would be sent again (outbound/rpc/stream.h), each attempt
// a failure to the breaker.
TEST_F(RpcStream, AStreamToNothingListeningEndsUnavailableAfterItsAttempts) {
  auto client = Make(PortNothingListensOn());
  ASSERT_NE(client, nullptr);
  Stream stream = client->OpenStream(kChat);
  Status status = Drive([&] { return stream.Finish(); });
  EXPECT_EQ(status.code, Code::kUnavailable) << status.message;
  EXPECT_FALSE(status.rejected);
  EXPECT_EQ(stream.attempts(), DefaultSettings().max_attempts);
  EXPECT_FALSE(stream.Write(Text("x")));
  std::string bytes;
  EXPECT_FALSE(stream.Read(&bytes));
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, DefaultSettings().max_attempts);
  EXPECT_FALSE(client->Connected());
}

// Nothing of it reached a server: even a method that must not run twice
// goes again.
TEST_F(RpcStream, ANonIdempotentStreamToNothingListeningIsSentAgainToo) {
  Settings settings = DefaultSettings();
  settings.non_idempotent_methods = {kChat};
  auto client = Make(PortNothingListensOn(), settings);
  ASSERT_NE(client, nullptr);
  Stream stream = client->OpenStream(kChat);
  Status status = Drive([&] { return stream.Finish(); });
  EXPECT_EQ(status.code, Code::kUnavailable) << status.message;
  EXPECT_EQ(stream.attempts(), DefaultSettings().max_attempts);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, DefaultSettings().max_attempts);
}

TEST_F(RpcStream, AStreamFailingAfterAMessageIsNotRetriedAndCountsOneFailure) {
  EchoServer server(Echoing());
  server.service().chat = [](int, grpc::ServerContext*, ChatStream* stream) {
    EchoRequest request;
    if (stream->Read(&request)) {
      EchoReply reply;
      reply.set_text("got " + request.text());
      stream->Write(reply);
    }
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "lost");
  };
  auto client = Make(server);  // DefaultClassify: UNAVAILABLE is Retry, Failure
  Stream stream = client->OpenStream(kChat);
  ASSERT_TRUE(stream.Write(Text("m")));
  EchoReply reply;
  ASSERT_TRUE(stream.Read(&reply));
  EXPECT_EQ(reply.text(), "got m");
  EXPECT_FALSE(stream.Read(&reply));
  Status status = Drive([&] { return stream.Finish(); });
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_EQ(status.message, "lost");
  EXPECT_EQ(stream.attempts(), 1);
  EXPECT_EQ(server.service().chat_calls(), 1);
  circuit::Counts counts = client->breaker().counts(clock_.Now());
  EXPECT_EQ(counts.failures, 1);
  EXPECT_EQ(counts.successes, 0);
  clock_.Advance(DefaultSettings().backoff_max);  // no retry is waiting either
  EXPECT_EQ(server.service().chat_calls(), 1);
}

TEST_F(RpcStream, TheStreamsEndReachesClassifyWithItsTrailers) {
  EchoServer server(Echoing());
  server.service().chat = [](int, grpc::ServerContext* context, ChatStream*) {
    context->AddTrailingMetadata("x-reason", "maintenance");
    return grpc::Status(grpc::StatusCode::ABORTED, "conflict");
  };
  std::mutex mu;
  Trailers seen;
  Settings settings = DefaultSettings();
  settings.classify = [&](std::string_view method, const Status& status, const Trailers& trailers) {
    if (status.code == Code::kAborted) {
      std::lock_guard lock(mu);
      seen = trailers;
      return Classification{retry::Outcome::kStop, Duration::zero(), circuit::Outcome::kFailure};
    }
    return DefaultClassify(method, status, trailers);
  };
  auto client = Make(server, settings);
  Stream stream = client->OpenStream(kChat);
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kAborted);
  ASSERT_EQ(stream.trailers().count("x-reason"), 1u);
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.count("x-reason"), 1u);
  EXPECT_EQ(seen.find("x-reason")->second, "maintenance");
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
  EXPECT_EQ(server.service().chat_calls(), 1);
}

// The server holds each Chat open until the client goes, and counts the
// calls the client half-closed rather than cancelled. (A call cancelled
// early may never reach a handler, so cancellations are not counted.)
struct Holding {
  std::atomic<int> half_closed{0};
  std::function<grpc::Status(int, grpc::ServerContext*, ChatStream*)> handler() {
    return [this](int, grpc::ServerContext* context, ChatStream* stream) {
      EchoRequest request;
      while (stream->Read(&request)) {
      }
      if (!context->IsCancelled()) ++half_closed;
      return grpc::Status::OK;
    };
  }
};

TEST_F(RpcStream, ACallerCancelledStreamIsIgnoredByTheBreaker) {
  Holding holding;
  EchoServer server(Echoing());
  server.service().chat = holding.handler();
  FailEverything fail;
  Settings settings = DefaultSettings();
  settings.classify = fail.classify();
  auto client = Make(server, settings);
  // More than the five failures in a row that would open the breaker.
  for (int i = 0; i < 6; ++i) {
    CancelSource cancel;
    Context context;
    context.cancel = cancel.token();
    Stream stream = client->OpenStream(kChat, context);
    ASSERT_TRUE(stream.Write(Text("x")));
    cancel.Cancel();
    EXPECT_EQ(stream.Finish().code, Code::kCancelled);
  }
  EXPECT_EQ(fail.asked.load(), 0);
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
  circuit::Counts counts = client->breaker().counts(clock_.Now());
  EXPECT_EQ(counts.failures, 0);
  EXPECT_EQ(counts.successes, 0);
}

TEST_F(RpcStream, ADroppedStreamIsCancelledAndIgnoredByTheBreaker) {
  Holding holding;
  auto server = std::make_unique<EchoServer>(Echoing());
  server->service().chat = holding.handler();
  FailEverything fail;
  Settings settings = DefaultSettings();
  settings.classify = fail.classify();
  auto client = Make(*server, settings);
  for (int i = 0; i < 6; ++i) {
    Stream stream = client->OpenStream(kChat);
    ASSERT_TRUE(stream.Write(Text("x")));
  }  // dropped without Finish
  EXPECT_EQ(fail.asked.load(), 0);
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
  circuit::Counts counts = client->breaker().counts(clock_.Now());
  EXPECT_EQ(counts.failures, 0);
  EXPECT_EQ(counts.successes, 0);
  // The server saw none half-closed (Shutdown waits for its handlers).
  server.reset();
  EXPECT_EQ(holding.half_closed.load(), 0);
}

TEST_F(RpcStream, AReplyThatDoesNotParseEndsTheStreamAndIsNotCounted) {
  EchoServer server(Echoing());
  server.service().chat = [](int, grpc::ServerContext*, ChatStream* stream) {
    EchoReply reply;
    // Not UTF-8: a proto3 string that does not parse (protobuf logs both
    // ends of it to stderr; the library writes nothing).
    reply.set_text("\xff\xfe");
    stream->Write(reply);
    EchoRequest request;
    while (stream->Read(&request)) {
    }
    return grpc::Status::OK;
  };
  FailEverything fail;
  Settings settings = DefaultSettings();
  settings.classify = fail.classify();
  auto client = Make(server, settings);
  Stream stream = client->OpenStream(kChat);
  EchoReply reply;
  EXPECT_FALSE(stream.Read(&reply));
  EXPECT_FALSE(stream.Write(Text("after")));  // the stream has ended
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_EQ(status.message, "a response message did not parse");
  EXPECT_EQ(fail.asked.load(), 0);
  circuit::Counts counts = client->breaker().counts(clock_.Now());
  EXPECT_EQ(counts.failures, 0);
  EXPECT_EQ(counts.successes, 0);
}

TEST_F(RpcStream, AnOpenBreakerRejectsTheStreamAndNothingIsSent) {
  EchoServer server([](int, grpc::ServerContext*, const EchoRequest&, EchoReply*) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down");
  });
  server.service().chat = EchoEach;
  Settings settings = DefaultSettings();
  settings.max_attempts = 1;
  auto client = Make(server, settings);
  for (int i = 0; i < 5; ++i) client->Call(kSay, "");
  ASSERT_EQ(client->breaker().state(clock_.Now()), circuit::State::kOpen);
  Stream stream = client->OpenStream(kChat);
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_TRUE(status.rejected);
  EXPECT_EQ(stream.attempts(), 0);
  EXPECT_EQ(server.service().chat_calls(), 0);
}

// A connection that hangs while it is made (a connect nobody answers):
// Timeout bounds every form of call until its request is on a connection
// (a stream's headers written), on the Runtime's clock. One attempt, one
// failure for the breaker.
class RpcStreamOpening : public RpcStream {
 protected:
  std::unique_ptr<Client> MakeToABlackHole() {
    hole_ = testing::BlackHole::Start();
    EXPECT_TRUE(hole_) << hole_.error().message();
    Settings settings = DefaultSettings();
    settings.timeout = std::chrono::milliseconds(300);
    settings.max_attempts = 1;
    return Make(hole_ ? (*hole_)->port() : PortNothingListensOn(), settings);
  }

  // Runs fn on its own thread until it returns, advancing the fake clock
  // to every timer, deadlines included, once a connect waits at the hole
  // (the attempt is on a connection being made, not still on its way to
  // one). Never to the client's idle timer, which the call's end arms
  // (90 s on) a moment before fn returns.
  template <typename Fn>
  auto DriveThroughDeadlines(Fn fn) {
    TimePoint until = clock_.Now() + std::chrono::seconds(60);
    auto future = std::async(std::launch::async, std::move(fn));
    // Each turn waits a millisecond or more: 10 000 turns, at least 10 s.
    for (int turns = 0; (!hole_ || (*hole_)->dials() == 0) &&
                        future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready;
         ++turns) {
      if (turns == 10'000) {
        ADD_FAILURE() << "no connect waited at the black hole after 10 000 turns";
        break;
      }
    }
    while (future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (auto next = clock_.next_timer(); next && *next < until) clock_.AdvanceTo(*next);
    }
    return future.get();
  }

  Result<std::unique_ptr<testing::BlackHole>> hole_;
};

TEST_F(RpcStreamOpening, TimeoutBoundsAStreamsOpeningOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  TimePoint start = clock_.Now();
  Stream stream = client->OpenStream(kChat);
  Status status = DriveThroughDeadlines([&] { return stream.Finish(); });
  EXPECT_EQ(status.code, Code::kDeadlineExceeded) << status.message;
  EXPECT_EQ(clock_.Now() - start, std::chrono::milliseconds(300));
  EXPECT_EQ(stream.attempts(), 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

TEST_F(RpcStreamOpening, TimeoutBoundsAServerStreamOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  int messages = 0;
  Reply reply = DriveThroughDeadlines(
      [&] { return client->ServerStream(kCount, "", [&](std::string_view) { ++messages; }); });
  EXPECT_EQ(reply.status.code, Code::kDeadlineExceeded) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(messages, 0);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

TEST_F(RpcStreamOpening, TimeoutEndsAUnaryCallOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  Reply reply = DriveThroughDeadlines([&] { return client->Call(kSay, ""); });
  EXPECT_EQ(reply.status.code, Code::kDeadlineExceeded) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

TEST_F(RpcStreamOpening, TimeoutEndsAnAsyncCallOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  std::future<Reply> call = client->CallAsync(kSay, "");
  Reply reply = DriveThroughDeadlines([&] { return call.get(); });
  EXPECT_EQ(reply.status.code, Code::kDeadlineExceeded) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

// Many calls whose deadlines pass together, the client destroyed as soon
// as the last has ended: each call ends once, DEADLINE_EXCEEDED, or
// rejected by the breaker that the first five of them opened when one
// had not begun its attempt yet (under the sanitizers in CI, nothing is
// used after the client has gone).
TEST_F(RpcStreamOpening, ManyDeadlinesPassingTogetherEachEndTheirCallOnce) {
  constexpr int kCalls = 32;
  for (int round = 0; round < 3; ++round) {
    auto client = MakeToABlackHole();
    std::vector<std::future<Reply>> calls;
    for (int i = 0; i < kCalls; ++i) calls.push_back(client->CallAsync(kSay, ""));
    std::string others;  // what the calls that ended otherwise got
    int ended_as_expected = DriveThroughDeadlines([&] {
      int n = 0;
      for (auto& call : calls) {
        Reply reply = call.get();
        if (reply.status.code == Code::kDeadlineExceeded || reply.status.rejected) {
          ++n;
        } else {
          others += reply.status.message + "; ";
        }
      }
      return n;
    });
    client.reset();
    EXPECT_EQ(ended_as_expected, kCalls) << others;
  }
}

}  // namespace
}  // namespace outbound::rpc
