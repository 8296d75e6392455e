// SPDX-License-Identifier: Apache-2.0
// Asynchronous unary calls (Client::CallAsync) against real
// grpc++ servers on loopback: the blocking call's loop, with no thread
// waiting. Waits between attempts are timers on the ManualClock, so a test
// sees a call parked between attempts and moves it on by advancing time.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "echo_server.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/telemetry.h"

namespace outbound::rpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What `done` got, and on which thread.
struct Outcome {
  Reply reply;
  std::exception_ptr thrown;
  std::thread::id thread;
};

class RpcAsync : public RpcClient {
 protected:
  // A `done` that fulfils the returned future.
  static std::pair<Client::Done, std::future<Outcome>> Capture() {
    auto promise = std::make_shared<std::promise<Outcome>>();
    auto future = promise->get_future();
    return {[promise](Reply reply, std::exception_ptr thrown) {
              promise->set_value({std::move(reply), thrown, std::this_thread::get_id()});
            },
            std::move(future)};
  }

  // Advances the clock to each wait the call sets until it ends (Drive's
  // rule: never to a default Timeout's deadline).
  template <typename T>
  T Await(std::future<T>& future) {
    return Drive([&future] { return future.get(); });
  }

  // Say by name, its reply parsed into reply_ once it is OK.
  std::future<Outcome> SayAsync(Client& client, const std::string& text,
                                const Context& context = {}) {
    request_.set_text(text);
    auto promise = std::make_shared<std::promise<Outcome>>();
    auto future = promise->get_future();
    client.CallAsync(
        kSay, request_.SerializeAsString(),
        [this, promise](Reply reply, std::exception_ptr thrown) {
          if (reply.status.ok()) reply_.ParseFromString(reply.body);
          promise->set_value({std::move(reply), thrown, std::this_thread::get_id()});
        },
        context);
    return future;
  }

  // The message of the std::runtime_error `thrown` holds; "" for anything else.
  static std::string WhatWasThrown(const std::exception_ptr& thrown) {
    try {
      std::rethrow_exception(thrown);
    } catch (const std::runtime_error& e) {
      return e.what();
    } catch (...) {
      return "";
    }
  }

  EchoRequest request_;
};

Handler AlwaysUnavailable(const char* pushback_ms = nullptr) {
  return [pushback_ms](int, grpc::ServerContext* context, const EchoRequest&, EchoReply*) {
    if (pushback_ms != nullptr) context->AddTrailingMetadata("grpc-retry-pushback-ms", pushback_ms);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down");
  };
}

TEST_F(RpcAsync, UnavailableIsRetriedUntilOk) {
  EchoServer server(UnavailableThenEcho(2));
  auto client = Make(server);
  auto call = SayAsync(*client, "hi");
  Outcome outcome = Await(call);
  EXPECT_TRUE(outcome.reply.status.ok()) << outcome.reply.status.message;
  EXPECT_FALSE(outcome.thrown);
  EXPECT_EQ(reply_.text(), "echo: hi");
  EXPECT_EQ(server.calls(), 3);
}

TEST_F(RpcAsync, ByNameGivesTheBodyAndTheAttempts) {
  EchoServer server(UnavailableThenEcho(1));
  auto client = Make(server);
  EchoRequest request;
  request.set_text("raw");
  auto [done, call] = Capture();
  client->CallAsync(kSay, request.SerializeAsString(), done);
  Outcome outcome = Await(call);
  ASSERT_TRUE(outcome.reply.status.ok()) << outcome.reply.status.message;
  EXPECT_EQ(outcome.reply.attempts, 2);
  EchoReply parsed;
  ASSERT_TRUE(parsed.ParseFromString(outcome.reply.body));
  EXPECT_EQ(parsed.text(), "echo: raw");
}

// The wait between attempts is a timer, not a sleeping thread: the call is
// parked until the clock reaches the pushback, and no sooner.
TEST_F(RpcAsync, PushbackIsATimerOnTheClock) {
  EchoServer server(PushbackOnceThenEcho("2000"));
  auto client = Make(server);
  TimePoint start = clock_.Now();
  auto call = SayAsync(*client, "x");
  ASSERT_TRUE(clock_.WaitForTimerBy(start + seconds(2)));
  EXPECT_EQ(clock_.next_timer(), start + seconds(2));  // the pushback, jitter 0
  clock_.Advance(milliseconds(1999));
  EXPECT_EQ(call.wait_for(milliseconds(50)), std::future_status::timeout);
  EXPECT_EQ(server.calls(), 1);
  clock_.Advance(milliseconds(1));
  Outcome outcome = call.get();
  EXPECT_TRUE(outcome.reply.status.ok()) << outcome.reply.status.message;
  EXPECT_EQ(server.calls(), 2);
}

TEST_F(RpcAsync, NegativePushbackStops) {
  EchoServer server(AlwaysUnavailable("-1"));
  auto client = Make(server);
  auto [done, call] = Capture();
  client->CallAsync(kSay, "", done);
  Outcome outcome = call.get();  // no timer: nothing to advance
  EXPECT_EQ(outcome.reply.status.code, Code::kUnavailable);
  EXPECT_EQ(outcome.reply.attempts, 1);
  EXPECT_EQ(server.calls(), 1);
}

// done never runs on the stack that started the call, even when the call
// ends before anything is sent: rejected by an open breaker, or cancelled
// already.
TEST_F(RpcAsync, ACallThatEndsAtOnceEndsOnAnotherThread) {
  EchoServer server(AlwaysUnavailable());
  Settings settings = DefaultSettings();
  settings.max_attempts = 1;
  auto client = Make(server, settings);
  for (int i = 0; i < 5; ++i) {
    auto [done, call] = Capture();
    client->CallAsync(kSay, "", done);
    EXPECT_EQ(call.get().reply.status.code, Code::kUnavailable);
  }
  ASSERT_EQ(client->breaker().state(clock_.Now()), circuit::State::kOpen);

  auto [rejected_done, rejected] = Capture();
  client->CallAsync(kSay, "", rejected_done);
  Outcome outcome = rejected.get();
  EXPECT_TRUE(outcome.reply.status.rejected);
  EXPECT_EQ(outcome.reply.status.code, Code::kUnavailable);
  EXPECT_EQ(outcome.reply.attempts, 0);
  EXPECT_NE(outcome.thread, std::this_thread::get_id());
  EXPECT_EQ(server.calls(), 5);

  CancelSource cancel;
  cancel.Cancel();
  Context context;
  context.cancel = cancel.token();
  auto [cancelled_done, cancelled] = Capture();
  client->CallAsync(kSay, "", cancelled_done, context);
  outcome = cancelled.get();
  EXPECT_EQ(outcome.reply.status.code, Code::kCancelled);
  EXPECT_NE(outcome.thread, std::this_thread::get_id());
  EXPECT_EQ(server.calls(), 5);
}

// A cancel while the call waits for its next attempt ends it at once, with
// what the last attempt got, no clock advanced and nothing more sent.
TEST_F(RpcAsync, ACancelDuringTheWaitEndsTheCallAtOnce) {
  EchoServer server(AlwaysUnavailable("5000"));
  auto client = Make(server);
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  auto [done, call] = Capture();
  TimePoint start = clock_.Now();
  client->CallAsync(kSay, "", done, context);
  ASSERT_TRUE(clock_.WaitForTimerBy(start + seconds(5)));
  cancel.Cancel();
  Outcome outcome = call.get();
  EXPECT_EQ(outcome.reply.status.code, Code::kUnavailable);
  EXPECT_EQ(outcome.reply.attempts, 1);
  EXPECT_NE(outcome.thread, std::this_thread::get_id());
  EXPECT_EQ(clock_.Now(), start);
  clock_.Advance(seconds(5));  // the pushback's end sends nothing more
  EXPECT_EQ(server.calls(), 1);
}

// A cancel during an attempt cancels the RPC: the server sees it, the call
// ends CANCELLED, and the breaker does not count it.
TEST_F(RpcAsync, ACancelDuringAnAttemptCancelsTheRpc) {
  std::atomic<bool> server_saw_cancel{false};
  EchoServer server(HangNotingTheEnd(server_saw_cancel));
  auto client = Make(server);
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  auto [done, call] = Capture();
  client->CallAsync(kSay, "", done, context);
  while (server.calls() == 0) std::this_thread::sleep_for(milliseconds(1));
  cancel.Cancel();
  Outcome outcome = call.get();
  EXPECT_EQ(outcome.reply.status.code, Code::kCancelled);
  EXPECT_EQ(outcome.reply.attempts, 1);
  EXPECT_NE(outcome.thread, std::this_thread::get_id());  // not on the canceller's stack
  auto counts = client->breaker().counts(clock_.Now());
  EXPECT_EQ(counts.failures, 0);
  EXPECT_EQ(counts.successes, 0);
  while (!server_saw_cancel) std::this_thread::sleep_for(milliseconds(1));
}

// A call cancelled from the caller's own code on the loop (here, another
// call's done) ends after that code returns, not inside it: the caller may
// hold a lock there that the cancelled call's done takes too.
TEST_F(RpcAsync, ACancelFromAnotherCallsDoneEndsTheCallAfterThatDoneReturns) {
  EchoServer server(
      [](int call, grpc::ServerContext* context, const EchoRequest& request, EchoReply* reply) {
        if (request.text() == "hang") return Hang(call, context, request, reply);
        reply->set_text("echo: " + request.text());
        return grpc::Status::OK;
      });
  auto client = Make(server);
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  std::atomic<bool> in_first_done{false};
  std::promise<bool> hung_ended;  // whether it ended inside the first's done
  auto ended = hung_ended.get_future();
  request_.set_text("hang");
  client->CallAsync(
      kSay, request_.SerializeAsString(),
      [&](const Reply& reply, std::exception_ptr) {
        EXPECT_EQ(reply.status.code, Code::kCancelled);
        hung_ended.set_value(in_first_done.load());
      },
      context);
  while (server.calls() == 0) std::this_thread::sleep_for(milliseconds(1));
  std::promise<void> first_done;
  request_.set_text("quick");
  client->CallAsync(kSay, request_.SerializeAsString(),
                    [&](const Reply& reply, std::exception_ptr) {
                      EXPECT_TRUE(reply.status.ok()) << reply.status.message;
                      in_first_done = true;
                      cancel.Cancel();
                      in_first_done = false;
                      first_done.set_value();
                    });
  first_done.get_future().get();
  ASSERT_EQ(ended.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_FALSE(ended.get()) << "the cancelled call's done ran inside the other call's done";
}

TEST_F(RpcAsync, TimeoutEndsAHungCallAndCountsAgainstTheBreaker) {
  EchoServer server(Hang);
  Settings settings = DefaultSettings();
  settings.timeout = milliseconds(300);
  auto client = Make(server, settings);
  auto [done, call] = Capture();
  client->CallAsync(kSay, "", done);
  Outcome outcome = call.get();
  EXPECT_EQ(outcome.reply.status.code, Code::kDeadlineExceeded);
  EXPECT_EQ(outcome.reply.attempts, 1);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 1);
}

// What classify throws reaches done, on gRPC's thread; the breaker stays
// consistent (the attempt's slot is freed) and the next call goes through.
TEST_F(RpcAsync, AThrowingClassifyReachesDone) {
  EchoServer server(Echoing());
  Settings settings = DefaultSettings();
  std::atomic<bool> throwing{true};
  settings.classify = [&throwing](std::string_view method, const Status& status,
                                  const Trailers& trailers) {
    if (throwing) throw std::runtime_error("classify broke");
    return DefaultClassify(method, status, trailers);
  };
  auto client = Make(server, settings);
  auto [done, call] = Capture();
  client->CallAsync(kSay, "", done);
  Outcome outcome = call.get();
  ASSERT_TRUE(outcome.thrown);
  EXPECT_EQ(WhatWasThrown(outcome.thrown), "classify broke");
  throwing = false;
  auto [next_done, next] = Capture();
  client->CallAsync(kSay, "", next_done);
  EXPECT_TRUE(next.get().reply.status.ok());
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
}

// Many calls in flight from one thread, none waiting for another: the
// server holds each until all of them have arrived.
TEST_F(RpcAsync, ManyCallsInFlightFromOneThread) {
  constexpr int kCalls = 16;
  std::mutex mu;
  std::condition_variable all_in;
  int arrived = 0;
  EchoServer server([&](int, grpc::ServerContext*, const EchoRequest& request, EchoReply* reply) {
    std::unique_lock lock(mu);
    ++arrived;
    all_in.notify_all();
    if (!all_in.wait_for(lock, seconds(20), [&] { return arrived >= kCalls; })) {
      return grpc::Status(grpc::StatusCode::ABORTED, "the calls came one by one");
    }
    return Ok(reply, request);
  });
  auto client = Make(server);
  std::vector<std::future<Reply>> calls;
  for (int i = 0; i < kCalls; ++i) {
    EchoRequest request;
    request.set_text(std::to_string(i));
    calls.push_back(client->CallAsync(kSay, request.SerializeAsString()));
  }
  for (int i = 0; i < kCalls; ++i) {
    Reply reply = calls[i].get();
    EXPECT_TRUE(reply.status.ok()) << i << ": " << reply.status.message;
    EchoReply parsed;
    ASSERT_TRUE(parsed.ParseFromString(reply.body));
    EXPECT_EQ(parsed.text(), "echo: " + std::to_string(i));
  }
  EXPECT_EQ(server.calls(), kCalls);
}

// Destroying the client ends the calls still going and waits for their
// done: one parked between attempts (ended with its last attempt's status),
// one in flight (CANCELLED).
TEST_F(RpcAsync, DestroyingTheClientEndsItsCallsAndWaitsForThem) {
  EchoServer waiting_server(AlwaysUnavailable("5000"));
  EchoServer hung_server(Hang);
  auto waiting_client = Make(waiting_server);
  auto [waiting_done, waiting] = Capture();
  TimePoint start = clock_.Now();
  waiting_client->CallAsync(kSay, "", waiting_done);
  ASSERT_TRUE(clock_.WaitForTimerBy(start + seconds(5)));
  waiting_client.reset();
  ASSERT_EQ(waiting.wait_for(seconds(0)), std::future_status::ready);
  EXPECT_EQ(waiting.get().reply.status.code, Code::kUnavailable);
  EXPECT_EQ(clock_.Now(), start);

  network_.Add("hung", 9090, "127.0.0.1", hung_server.port());
  Settings settings = DefaultSettings();
  settings.addr = "hung:9090";
  auto hung_client = std::move(*Client::Create(runtime_, settings));
  auto [hung_done, hung] = Capture();
  hung_client->CallAsync(kSay, "", hung_done);
  while (hung_server.calls() == 0) std::this_thread::sleep_for(milliseconds(1));
  hung_client.reset();
  ASSERT_EQ(hung.wait_for(seconds(0)), std::future_status::ready);
  EXPECT_EQ(hung.get().reply.status.code, Code::kCancelled);
}

// When ~Client returns, the done callables of its calls are gone too, so
// what they hold is let go while the client is there, never last on one of
// the client's threads.
TEST_F(RpcAsync, ADonesCapturesAreGoneWhenTheClientIs) {
  EchoServer server(Echoing());
  struct Sentinel {
    explicit Sentinel(std::atomic<bool>* g) : gone(g) {}
    Sentinel(Sentinel&& other) noexcept : gone(std::exchange(other.gone, nullptr)) {}
    ~Sentinel() {
      if (gone != nullptr) gone->store(true);
    }
    std::atomic<bool>* gone;
  };
  for (int i = 0; i < 50; ++i) {
    auto client = Make(server);
    std::atomic<bool> captures_gone{false};
    std::promise<Status> ended;
    auto future = ended.get_future();
    client->CallAsync(kSay, "",
                      [&ended, sentinel = std::make_shared<Sentinel>(&captures_gone)](
                          Reply reply, std::exception_ptr) { ended.set_value(reply.status); });
    ASSERT_TRUE(future.get().ok());
    client.reset();
    ASSERT_TRUE(captures_gone.load()) << "round " << i;
  }
}

TEST_F(RpcAsync, EachAttemptIsAClientSpan) {
  testing::InMemoryTelemetry recorded;
  runtime_.telemetry = recorded.telemetry();
  EchoServer server(UnavailableThenEcho(2));
  auto client = Make(server);
  auto [done, call] = Capture();
  client->CallAsync(kSay, "", done);
  ASSERT_TRUE(Await(call).reply.status.ok());
  auto spans = recorded.Spans(telemetry::SpanKind::kClient);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].status, telemetry::StatusCode::kError);
  EXPECT_EQ(telemetry::ToString(*telemetry::Find(spans[2].attributes, "rpc.response.status_code")),
            "OK");
}

// Failure injection takes the asynchronous path too: an injected status is
// never sent, an injected delay is a timer before the attempt goes.
TEST_F(RpcAsync, InjectedFaultsSendNothingButADelayedAttempt) {
  EchoServer server(Echoing());
  runtime_.inject_faults = true;
  auto client = Make(server);
  auto scenario = [](std::string fault) {
    Context context;
    context.baggage = {{"outbound-fault", "grpc:backend:9090=" + std::move(fault), ""}};
    return context;
  };
  auto [aborted_done, aborted] = Capture();
  client->CallAsync(kSay, "", aborted_done, scenario("abort"));
  Outcome outcome = Await(aborted);
  EXPECT_EQ(outcome.reply.status.code, Code::kUnavailable);
  EXPECT_EQ(outcome.reply.attempts, 3);
  EXPECT_EQ(server.calls(), 0);

  auto [delayed_done, delayed] = Capture();
  TimePoint start = clock_.Now();
  client->CallAsync(kSay, "", delayed_done, scenario("delay:2s"));
  ASSERT_TRUE(clock_.WaitForTimerBy(start + seconds(2)));
  EXPECT_EQ(server.calls(), 0);
  clock_.Advance(seconds(2));
  EXPECT_TRUE(delayed.get().reply.status.ok());
  EXPECT_EQ(server.calls(), 1);
}

}  // namespace
}  // namespace outbound::rpc
