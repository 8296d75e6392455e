// SPDX-License-Identifier: Apache-2.0
// The gRPC client against a server nobody here wrote: grpc-js, started by
// each test. What every server must see is StockGrpcServerTest's
// (stock_grpc_server_test.cc), run here against grpc-js serving peer.Test
// (tests/rpc/grpc_js_test_service.js); this file adds, against grpc-js
// serving Echo.Say (tests/rpc/grpc_js_peer.js), policy per method, the
// coroutine and async forms, injected faults and the client's end with
// calls in flight. Waits run on a ManualClock the test advances to each
// timer the call sets.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "grpc_server_test.h"
#include "methods.h"
#include "node_peer.h"
#include "outbound/rpc/asio.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

GrpcServerProgram GrpcJs() {
  return {"grpc-js",
          {OUTBOUND_GRPC_JS_TEST_SERVICE, "--modules=" OUTBOUND_RPC_PEER_MODULES},
          "grpc_js_test_service.js",
          /*node_script=*/true};
}

INSTANTIATE_TEST_SUITE_P(GrpcJs, StockGrpcServerTest, ::testing::Values(GrpcJs()), ProgramName);

class GrpcJsPeer : public ::testing::Test {
 protected:
  GrpcJsPeer() : random_(0.0) {
    runtime_.clock = &clock_;
    runtime_.network = &network_;
    runtime_.random = &random_;
  }

  // Starts the peer with its answers and a client of it.
  void Start(const std::string& answers, Settings settings = DefaultSettings()) {
    peer_ = std::make_unique<peers::NodePeer>(
        OUTBOUND_RPC_PEER_SCRIPT,
        std::vector<std::string>{"--modules=" OUTBOUND_RPC_PEER_MODULES, "--answers=" + answers});
    network_.Add("backend", 9090, "127.0.0.1", peer_->port());
    timeout_ = settings.timeout;
    settings.addr = "backend:9090";
    auto client = Client::Create(runtime_, settings);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
  }

  // A call, the clock advanced to each wait it sets (a backoff, a pushback,
  // a delay) but never to its deadline: the stock server answers in real
  // time while the deadline's timer is pending.
  Reply Call(const Context& context = {}) {
    TimePoint until = clock_.Now() + timeout_;
    auto future = std::async(std::launch::async, [&] { return client_->Call(kSay, "", context); });
    while (future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (auto next = clock_.next_timer(); next && *next < until) clock_.AdvanceTo(*next);
    }
    return future.get();
  }

  int PeerCalls() { return peer_->Stats().at("calls").get<int>(); }

  // Waits (a safety net of 10 s real time) until the peer has seen `n`
  // calls left unanswered by the client.
  bool PeerSawCancelled(int n) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (peer_->Stats().at("cancelled").get<int>() < n) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  testing::ManualClock clock_;
  testing::NetworkMap network_;
  testing::FixedRandom random_;
  Runtime runtime_;
  std::unique_ptr<peers::NodePeer> peer_;
  std::unique_ptr<Client> client_;
  Duration timeout_ = DefaultSettings().timeout;  // the client's
};

// Policy per method (Settings::methods) against a stock server: the
// method's own attempts and timeout replace its service's and the
// client's, for its calls alone; the server is told the method's timeout.
TEST_F(GrpcJsPeer, AMethodsOwnPolicyReplacesItsServicesAndTheClients) {
  Settings settings = DefaultSettings();  // 3 attempts, 10 s
  settings.methods = {
      MethodPolicy{.method = "/outbound.test.Echo/", .max_attempts = 2},
      MethodPolicy{.method = kSay, .timeout = std::chrono::seconds(4), .max_attempts = 1},
  };
  Start("UNAVAILABLE,UNAVAILABLE,OK", settings);
  timeout_ = std::chrono::seconds(4);
  Reply reply = Call();
  EXPECT_EQ(reply.status.code, Code::kUnavailable) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(PeerCalls(), 1);
  nlohmann::json last = peer_->Stats().at("last");
  ASSERT_FALSE(last.at("deadline_ms").is_null()) << "no grpc-timeout arrived";
  EXPECT_LE(last.at("deadline_ms").get<double>(), 4000);
  EXPECT_GT(last.at("deadline_ms").get<double>(), 3000);
}

TEST_F(GrpcJsPeer, AServicesPolicyAppliesToItsMethodsWithoutOneOfTheirOwn) {
  Settings settings = DefaultSettings();  // 3 attempts
  settings.methods = {MethodPolicy{.method = "/outbound.test.Echo/", .max_attempts = 2}};
  Start("UNAVAILABLE,UNAVAILABLE,OK", settings);
  Reply reply = Call();
  EXPECT_EQ(reply.status.code, Code::kUnavailable) << reply.status.message;
  EXPECT_EQ(reply.attempts, 2);
  EXPECT_EQ(PeerCalls(), 2);
}

// The co_await form (outbound/rpc/asio.h): a coroutine awaits a call the
// server pushes back once, whose wait runs on the client's clock, and
// resumes on the thread running its own execution context.
TEST_F(GrpcJsPeer, ACoroutineAwaitsACallRetriedAfterThePushback) {
  namespace asio = boost::asio;
  asio::io_context io;  // outlives the client: reset below
  Start("RESOURCE_EXHAUSTED:2000,OK");
  TimePoint start = clock_.Now();
  std::optional<Reply> got;
  std::thread::id resumed_on;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        got = co_await AsyncCall(*client_, kSay, "", asio::use_awaitable);
        resumed_on = std::this_thread::get_id();
      },
      asio::detached);
  std::thread::id runner;
  auto ran = std::async(std::launch::async, [&] {
    runner = std::this_thread::get_id();
    io.run();  // until the call has completed: it holds the context's work
  });
  while (ran.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    if (auto next = clock_.next_timer(); next && *next < start + timeout_) clock_.AdvanceTo(*next);
  }
  ran.get();
  client_.reset();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->status.ok()) << got->status.message;
  EXPECT_EQ(got->attempts, 2);
  EXPECT_EQ(PeerCalls(), 2);
  EXPECT_EQ(clock_.Now() - start, std::chrono::seconds(2));
  EXPECT_EQ(resumed_on, runner);
}

// Injected faults against a stock server: an abort or a status is never
// sent; a delay is waited in fake time, then the attempt is sent.
TEST_F(GrpcJsPeer, InjectedFaultsSendNothingButADelayedAttempt) {
  Settings settings = DefaultSettings();
  settings.faults.enabled = true;
  settings.max_attempts = 1;
  Start("OK", settings);
  Context aborted;
  aborted.baggage = {{"outbound-fault", "grpc:backend:9090=abort", ""}};
  EXPECT_EQ(Call(aborted).status.code, Code::kUnavailable);
  Context answered;
  answered.baggage = {{"outbound-fault", "grpc:backend:9090=status:503", ""}};
  EXPECT_EQ(Call(answered).status.code, Code::kUnavailable);
  EXPECT_EQ(PeerCalls(), 0);

  Context delayed;
  delayed.baggage = {{"outbound-fault", "grpc:backend:9090=delay:2s", ""}};
  TimePoint start = clock_.Now();
  Reply reply = Call(delayed);
  EXPECT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(clock_.Now() - start, std::chrono::seconds(2));
  EXPECT_EQ(PeerCalls(), 1);
}

// The asynchronous form against the stock server: UNAVAILABLE retried, a
// 2 s pushback waited as a timer on the clock, done on another thread.
TEST_F(GrpcJsPeer, AnAsyncCallRetriesAndWaitsThePushbackOnTheClock) {
  Start("UNAVAILABLE,RESOURCE_EXHAUSTED:2000,OK");
  std::promise<std::pair<Reply, std::thread::id>> ended;
  auto future = ended.get_future();
  TimePoint start = clock_.Now();
  client_->CallAsync(kSay, "", [&ended](Reply reply, std::exception_ptr) {
    ended.set_value({std::move(reply), std::this_thread::get_id()});
  });
  while (future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    if (auto next = clock_.next_timer(); next && *next < start + timeout_) clock_.AdvanceTo(*next);
  }
  auto [reply, thread] = future.get();
  EXPECT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.attempts, 3);
  EXPECT_EQ(PeerCalls(), 3);
  EXPECT_EQ(clock_.Now() - start, std::chrono::seconds(2));  // backoff jitter 0, then the pushback
  EXPECT_NE(thread, std::this_thread::get_id());
}

// A cancel of an asynchronous call mid-attempt reaches the stock server as
// a cancelled call; the call ends CANCELLED, not counted by the breaker.
TEST_F(GrpcJsPeer, AnAsyncCallCancelledMidAttemptIsCancelledAtTheServer) {
  Start("HANG");
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  std::promise<Reply> ended;
  auto future = ended.get_future();
  client_->CallAsync(
      kSay, "", [&ended](Reply reply, std::exception_ptr) { ended.set_value(std::move(reply)); },
      context);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (PeerCalls() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(PeerCalls(), 1);
  cancel.Cancel();
  Reply reply = future.get();
  EXPECT_EQ(reply.status.code, Code::kCancelled) << reply.status.message;
  EXPECT_EQ(client_->breaker().counts(clock_.Now()).failures, 0);
  EXPECT_TRUE(PeerSawCancelled(1));
}

// Destroying the client ends its asynchronous calls and waits for their
// `done`. A call parked in its 2 s pushback wait ends at once with what its
// one attempt got: no clock advanced, nothing more sent to the stock server.
TEST_F(GrpcJsPeer, DestroyingTheClientEndsAnAsyncCallParkedInItsWait) {
  Start("RESOURCE_EXHAUSTED:2000,OK");
  std::promise<Reply> ended;
  auto future = ended.get_future();
  TimePoint start = clock_.Now();
  client_->CallAsync(
      kSay, "", [&ended](Reply reply, std::exception_ptr) { ended.set_value(std::move(reply)); });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (clock_.next_timer() != start + std::chrono::seconds(2) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(clock_.next_timer(), start + std::chrono::seconds(2)) << "the call never parked";
  client_.reset();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  Reply reply = future.get();
  EXPECT_EQ(reply.status.code, Code::kResourceExhausted) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(clock_.Now(), start);
  EXPECT_FALSE(clock_.next_timer().has_value());  // the wait's timer is gone
  EXPECT_EQ(PeerCalls(), 1);
}

// A call mid-attempt when the client goes: its RPC is cancelled, which the
// stock server sees, and `done` has run by the time ~Client returns.
TEST_F(GrpcJsPeer, DestroyingTheClientCancelsAnAsyncCallMidAttemptAtTheServer) {
  Start("HANG");
  std::promise<Reply> ended;
  auto future = ended.get_future();
  client_->CallAsync(
      kSay, "", [&ended](Reply reply, std::exception_ptr) { ended.set_value(std::move(reply)); });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (PeerCalls() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(PeerCalls(), 1);
  client_.reset();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(future.get().status.code, Code::kCancelled);
  EXPECT_TRUE(PeerSawCancelled(1));
  EXPECT_EQ(PeerCalls(), 1);
}

}  // namespace
}  // namespace outbound::rpc
