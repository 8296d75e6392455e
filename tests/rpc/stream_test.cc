// SPDX-License-Identifier: Apache-2.0
// Client-streaming and bidirectional streams (Client::OpenStream), and the
// generated-stub helper (Client::Call with a stub's method, Invoke), against
// real grpc++ servers on loopback. Waits between attempts run on the
// fixture's ManualClock.
#include "outbound/rpc/stream.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "echo_server.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/black_hole.h"

namespace outbound::rpc {
namespace {

constexpr char kCollect[] = "/outbound.test.Echo/Collect";
constexpr char kChat[] = "/outbound.test.Echo/Chat";
constexpr char kCount[] = "/outbound.test.Echo/Count";

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
  ASSERT_TRUE(stream.opened());
  EXPECT_EQ(stream.attempts(), 1);
  for (const char* text : {"a", "b", "c"}) EXPECT_TRUE(stream.Write(Text(text)));
  EXPECT_TRUE(stream.WritesDone());
  EchoReply reply;
  ASSERT_TRUE(stream.Read(&reply));
  EXPECT_EQ(reply.text(), "a;b;c;");
  EXPECT_FALSE(stream.Read(&reply));
  Status status = stream.Finish();
  EXPECT_TRUE(status.ok()) << status.message;
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
  ASSERT_TRUE(stream.opened());
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
  ASSERT_TRUE(stream.opened());
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

TEST_F(RpcStream, OpeningIsRetriedUntilTheServerListens) {
  std::uint16_t port = PortNothingListensOn();
  auto created = Make(port);
  ASSERT_NE(created, nullptr);
  Client& client = *created;
  auto opening = std::async(std::launch::async, [&] { return client.OpenStream(kChat); });
  // The first attempt found nothing listening: the loop waits out its
  // backoff (FixedRandom(0): due now) on the fake clock.
  ASSERT_TRUE(clock_.WaitForTimerBy(clock_.Now()));
  EchoServer server(Echoing(), grpc::InsecureServerCredentials(), port);
  ASSERT_TRUE(server.started());
  server.service().chat = EchoEach;
  // gRPC reconnects on its own schedule; the second attempt goes once the
  // channel is up.
  ASSERT_TRUE(client.Connected(std::chrono::seconds(20)));
  clock_.AdvanceTo(*clock_.next_timer());
  Stream stream = opening.get();
  ASSERT_TRUE(stream.opened());
  EXPECT_EQ(stream.attempts(), 2);
  ASSERT_TRUE(stream.Write(Text("up")));
  EchoReply reply;
  ASSERT_TRUE(stream.Read(&reply));
  EXPECT_EQ(reply.text(), "echo: up");
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_EQ(server.service().chat_calls(), 1);
  circuit::Counts counts = client.breaker().counts(clock_.Now());
  EXPECT_EQ(counts.failures, 1);   // the failed opening
  EXPECT_EQ(counts.successes, 1);  // the stream's end
}

TEST_F(RpcStream, AnOpeningThatNeverSucceedsEndsWithTheLastStatus) {
  auto client = Make(PortNothingListensOn());
  ASSERT_NE(client, nullptr);
  Stream stream = Drive([&] { return client->OpenStream(kChat); });
  EXPECT_FALSE(stream.opened());
  EXPECT_EQ(stream.attempts(), 3);
  EXPECT_FALSE(stream.Write(Text("x")));
  std::string bytes;
  EXPECT_FALSE(stream.Read(&bytes));
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_FALSE(status.rejected);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 3);
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
  Stream stream = Drive([&] { return client->OpenStream(kChat); });
  ASSERT_TRUE(stream.opened());
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
  EXPECT_EQ(clock_.pending_timers(), 0u);  // no retry is waiting either
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
      return Classification{retry::Outcome::kRetry, Duration::zero(), circuit::Outcome::kFailure};
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
  EXPECT_EQ(server.service().chat_calls(), 1);  // Retry from classify: an open stream is not
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
    ASSERT_TRUE(stream.opened()) << i;
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
    ASSERT_TRUE(stream.opened()) << i;
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
  ASSERT_TRUE(stream.opened());
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
  EXPECT_FALSE(stream.opened());
  EXPECT_EQ(stream.attempts(), 0);
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_TRUE(status.rejected);
  EXPECT_EQ(server.service().chat_calls(), 0);
}

// A connection that hangs while it is made (a connect nobody answers): the
// opening is bounded by Timeout, not by gRPC's own connect timeout (20 s,
// then UNAVAILABLE, retried after a wait the manual clock never ends).
// Real time runs the bound, as it runs a unary attempt's deadline; one
// attempt, one failure for the breaker.
class RpcStreamOpening : public RpcStream {
 protected:
  // Runs fn(context) with a cancel that ends it if it has not returned by
  // `bound` of real time; whether it returned by then.
  template <typename Fn>
  bool EndsWithin(std::chrono::seconds bound, Fn fn) {
    CancelSource cancel;
    Context context;
    context.cancel = cancel.token();
    auto call = std::async(std::launch::async, [&] { fn(context); });
    bool ended = call.wait_for(bound) == std::future_status::ready;
    if (!ended) cancel.Cancel();
    call.get();
    return ended;
  }

  std::unique_ptr<Client> MakeToABlackHole() {
    hole_ = testing::BlackHole::Start();
    EXPECT_TRUE(hole_) << hole_.error().message();
    Settings settings = DefaultSettings();
    settings.timeout = std::chrono::milliseconds(300);
    return Make(hole_ ? (*hole_)->port() : PortNothingListensOn(), settings);
  }

  Result<std::unique_ptr<testing::BlackHole>> hole_;
};

TEST_F(RpcStreamOpening, TimeoutBoundsAStreamsOpeningOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  Status status;
  int attempts = 0;
  EXPECT_TRUE(EndsWithin(std::chrono::seconds(10), [&](const Context& context) {
    Stream stream = client->OpenStream(kChat, context);
    EXPECT_FALSE(stream.opened());
    attempts = stream.attempts();
    status = stream.Finish();
  }));
  EXPECT_EQ(status.code, Code::kDeadlineExceeded) << status.message;
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

TEST_F(RpcStreamOpening, TimeoutBoundsAServerStreamsOpeningOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  Reply reply;
  int messages = 0;
  EXPECT_TRUE(EndsWithin(std::chrono::seconds(10), [&](const Context& context) {
    reply = client->ServerStream(
        kCount, "", [&](std::string_view) { ++messages; }, context);
  }));
  EXPECT_EQ(reply.status.code, Code::kDeadlineExceeded) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(messages, 0);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

// A unary attempt's deadline is kept by the library, not by gRPC (whose
// own deadline checks are off on the client's channel): on a connect that
// hangs no server is there to end the call at its grpc-timeout, so only the
// library's deadline can. Each form of call ends at Timeout, one attempt,
// one failure for the breaker.
TEST_F(RpcStreamOpening, TimeoutEndsAUnaryCallOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  Reply reply;
  EXPECT_TRUE(EndsWithin(std::chrono::seconds(10),
                         [&](const Context& context) { reply = client->Call(kSay, "", context); }));
  EXPECT_EQ(reply.status.code, Code::kDeadlineExceeded) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

TEST_F(RpcStreamOpening, TimeoutEndsAStubHelpersCallOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  auto stub = Echo::NewStub(client->channel());
  EchoReply reply;
  Status status;
  EXPECT_TRUE(EndsWithin(std::chrono::seconds(10), [&](const Context& context) {
    status = client->Call(kSay, &Echo::Stub::Say, *stub, Text("x"), &reply, context);
  }));
  EXPECT_EQ(status.code, Code::kDeadlineExceeded) << status.message;
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

TEST_F(RpcStreamOpening, TimeoutEndsAnAsyncCallOnAConnectThatHangs) {
  auto client = MakeToABlackHole();
  Reply reply;
  EXPECT_TRUE(EndsWithin(std::chrono::seconds(10), [&](const Context& context) {
    std::promise<Reply> ended;
    client->CallAsync(
        kSay, "", [&ended](Reply r, std::exception_ptr) { ended.set_value(std::move(r)); },
        context);
    reply = ended.get_future().get();
  }));
  EXPECT_EQ(reply.status.code, Code::kDeadlineExceeded) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

// Many attempts whose deadlines pass together, the client destroyed as
// soon as the last `done` has run, while the list's expiries may still hold
// their contexts: each call ends once, DEADLINE_EXCEEDED (under the
// sanitizers in CI, nothing is used after the client has gone).
TEST_F(RpcStreamOpening, ManyDeadlinesPassingTogetherEachEndTheirCallOnce) {
  constexpr int kCalls = 32;
  for (int round = 0; round < 3; ++round) {
    auto client = MakeToABlackHole();
    std::mutex mu;
    std::condition_variable cv;
    int ended = 0;
    int deadline_exceeded = 0;
    for (int i = 0; i < kCalls; ++i) {
      client->CallAsync(kSay, "", [&](Reply reply, std::exception_ptr) {
        std::lock_guard lock(mu);
        ++ended;
        if (reply.status.code == Code::kDeadlineExceeded) ++deadline_exceeded;
        cv.notify_all();
      });
    }
    {
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return ended == kCalls; }))
          << ended << " of " << kCalls << " calls ended";
    }
    client.reset();
    EXPECT_EQ(ended, kCalls);
    EXPECT_EQ(deadline_exceeded, kCalls);
  }
}

// --- A generated stub's method through the client's loop.

TEST_F(RpcStream, TheStubHelperRetriesUnavailableUntilOk) {
  EchoServer server(UnavailableThenEcho(2));
  auto client = Make(server);
  ASSERT_NE(client->channel(), nullptr);
  auto stub = Echo::NewStub(client->channel());
  EchoReply reply;
  Status status =
      Drive([&] { return client->Call(kSay, &Echo::Stub::Say, *stub, Text("stub"), &reply); });
  EXPECT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(reply.text(), "echo: stub");
  EXPECT_EQ(server.calls(), 3);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 2);
}

// The callback form: the stub's async() method, completed on gRPC's threads.
TEST_F(RpcStream, TheCallbackStubHelperRetriesUnavailableUntilOk) {
  EchoServer server(UnavailableThenEcho(2));
  auto client = Make(server);
  auto stub = Echo::NewStub(client->channel());
  EchoReply reply;
  Status status = Drive([&] {
    return client->Call(kSay, &Echo::Stub::async::Say, stub->async(), Text("cb"), &reply);
  });
  EXPECT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(reply.text(), "echo: cb");
  EXPECT_EQ(server.calls(), 3);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 2);
}

TEST_F(RpcStream, TheCallbackStubHelperEndsWithTheCallersCancelUncounted) {
  EchoServer server(Hang);
  auto client = Make(server);
  auto stub = Echo::NewStub(client->channel());
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  EchoReply reply;
  auto call = std::async(std::launch::async, [&] {
    return client->Call(kSay, &Echo::Stub::async::Say, stub->async(), Text("x"), &reply, context);
  });
  while (server.calls() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cancel.Cancel();
  Status status = call.get();
  EXPECT_EQ(status.code, Code::kCancelled);
  EXPECT_EQ(server.calls(), 1);
  circuit::Counts counts = client->breaker().counts(clock_.Now());
  EXPECT_EQ(counts.failures, 0);
  EXPECT_EQ(counts.successes, 0);
}

// Through the stub's interface (what a mock stub implements), with the
// call's Timeout as the attempt's deadline: a hung call ends
// DEADLINE_EXCEEDED and is one failure.
TEST_F(RpcStream, TheCallbackStubHelperTakesTheStubInterfaceAndItsTimeout) {
  EchoServer server(Hang);
  Settings settings = DefaultSettings();
  settings.timeout = std::chrono::milliseconds(300);
  auto client = Make(server, settings);
  std::unique_ptr<Echo::StubInterface> stub = Echo::NewStub(client->channel());
  EchoReply reply;
  Status status = client->Call(kSay, &Echo::StubInterface::async_interface::Say, stub->async(),
                               Text("x"), &reply);
  EXPECT_EQ(status.code, Code::kDeadlineExceeded);
  EXPECT_EQ(server.calls(), 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

TEST_F(RpcStream, InvokeCountsTheAttemptsOfAStubsMethod) {
  std::mutex mu;
  std::vector<bool> deadlines;
  EchoServer server(
      [&](int call, grpc::ServerContext* context, const EchoRequest& request, EchoReply* reply) {
        {
          std::lock_guard lock(mu);
          // Each attempt carries the call's Timeout (10 s) as its deadline.
          deadlines.push_back(context->deadline() <
                              std::chrono::system_clock::now() + std::chrono::seconds(11));
        }
        if (call < 3) {
          context->AddTrailingMetadata("grpc-retry-pushback-ms", "20");
          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "not yet");
        }
        return Ok(reply, request);
      });
  auto client = Make(server);
  auto stub = Echo::NewStub(client->channel());
  EchoReply reply;
  TimePoint start = clock_.Now();
  Reply result = Drive([&] {
    return client->Invoke(kSay, [&](grpc::ClientContext* attempt) {
      grpc::Status status = stub->Say(attempt, Text("inv"), &reply);
      return Status{static_cast<Code>(status.error_code()), status.error_message()};
    });
  });
  EXPECT_TRUE(result.status.ok()) << result.status.message;
  EXPECT_EQ(result.attempts, 3);
  EXPECT_TRUE(result.body.empty());
  EXPECT_EQ(reply.text(), "echo: inv");
  // Two pushbacks of 20 ms, read from each attempt's trailers.
  EXPECT_EQ(clock_.Now() - start, std::chrono::milliseconds(40));
  std::lock_guard lock(mu);
  EXPECT_EQ(deadlines, (std::vector<bool>{true, true, true}));
}

TEST_F(RpcStream, WithoutARouteTheStubIsNeverCalled) {
  Settings settings = DefaultSettings();
  settings.addr = "unknown:9090";
  settings.max_attempts = 1;
  auto client = Client::Create(runtime_, settings);
  ASSERT_TRUE(client);
  EXPECT_EQ((*client)->channel(), nullptr);
  bool called = false;
  Reply reply = (*client)->Invoke(kSay, [&](grpc::ClientContext*) {
    called = true;
    return Status{};
  });
  EXPECT_FALSE(called);
  EXPECT_EQ(reply.status.code, Code::kUnavailable);
}

}  // namespace
}  // namespace outbound::rpc
