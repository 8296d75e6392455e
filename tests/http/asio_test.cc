// SPDX-License-Identifier: Apache-2.0
// outbound/http/asio.h: a call awaited by a C++20 coroutine on a Boost.Asio
// executor, with the real client against the fake dependency on the manual
// clock.
#include "outbound/http/asio.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

#include "client_test_support.h"

namespace outbound::http {
namespace {

namespace asio = boost::asio;
using testing::Reply;
using testing::ServerRequest;
using namespace std::chrono_literals;

class AsioTest : public ::testing::Test, public ClientTestBase {};

// Counts the calls it passes on, as they are made.
class CountingSender final : public Sender {
 public:
  explicit CountingSender(Sender& next) : next_(next) {}
  using Sender::SendAsync;
  void SendAsync(Request request, Callback done) override {
    ++sent;
    next_.SendAsync(std::move(request), std::move(done));
  }
  std::atomic<int> sent{0};

 private:
  Sender& next_;
};

TEST_F(AsioTest, ACoroutineAwaitsACallAndResumesOnItsOwnExecutor) {
  Serve([](const ServerRequest& r) { return Reply::Status(200, "charge " + r.target); });
  // The context first: the client (its loop thread posts completions to
  // the context) is destroyed before it, as asio.h asks.
  asio::io_context io;
  auto client = MakeClient();
  std::optional<Result<Response>> got;
  std::thread::id resumed_on;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        got = co_await AsyncSend(*client, Request::Get("/charges/1"), asio::use_awaitable);
        resumed_on = std::this_thread::get_id();
      },
      asio::detached);
  io.run();  // returns once the coroutine is done: the call kept it busy

  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(*got) << got->error().message();
  EXPECT_EQ((*got)->status, 200);
  EXPECT_EQ((*got)->body, "charge /charges/1");
  // The coroutine went on on the thread running io_context, not on the
  // client's event loop.
  EXPECT_EQ(resumed_on, std::this_thread::get_id());
}

TEST_F(AsioTest, RunWaitsForACallWaitingOutItsRetryAfter) {
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) {
    if (++calls == 1) return Reply::Status(503).Header("Retry-After", "2");
    return Reply::Status(200, "second");
  });
  asio::io_context io;
  auto client = MakeClient();
  std::optional<Result<Response>> got;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        got = co_await AsyncSend(*client, Request::Get("/"), asio::use_awaitable);
      },
      asio::detached);
  auto ran = std::async(std::launch::async, [&] { io.run(); });

  ASSERT_TRUE(server->WaitForRequests(1));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + 2s));  // the client waits out Retry-After
  // The work the call holds keeps run() going through the wait.
  EXPECT_EQ(ran.wait_for(0s), std::future_status::timeout);
  clock.Advance(2s);
  ran.get();

  ASSERT_TRUE(got.has_value() && *got);
  EXPECT_EQ((*got)->body, "second");
  EXPECT_EQ((*got)->attempts, 2);
}

TEST_F(AsioTest, CoAwaitRethrowsWhatClassifyThrew) {
  Serve([](const ServerRequest&) { return Reply::Status(500); });
  Settings settings = PaymentsSettings();
  settings.classify = [](const Result<Response>&) -> Classification {
    throw std::runtime_error("classify bug");
  };
  asio::io_context io;
  auto client = MakeClient(settings);
  std::string caught;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        try {
          (void)co_await AsyncSend(*client, Request::Get("/"), asio::use_awaitable);
        } catch (const std::runtime_error& e) {
          caught = e.what();
        }
      },
      asio::detached);
  io.run();
  EXPECT_EQ(caught, "classify bug");
}

TEST_F(AsioTest, AFailedCallIsAValueNotAThrow) {
  Serve([](const ServerRequest&) { return Reply::Status(200); });
  asio::io_context io;
  auto client = MakeClient();
  std::optional<Result<Response>> got;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // Over before it began: nothing is sent, the call fails at once.
        got = co_await AsyncSend(*client, Request::Get("/").WithTimeout(Duration::zero()),
                                 asio::use_awaitable);
      },
      asio::detached);
  io.run();
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(*got);
  EXPECT_EQ(got->error().kind(), ErrorKind::kDeadline);
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(AsioTest, UseFutureAndDeferredAreTheOtherTokens) {
  Serve([](const ServerRequest&) { return Reply::Status(204); });
  asio::io_context io;
  auto client = MakeClient();
  auto guard = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });

  std::future<Result<Response>> future =
      AsyncSend(*client, Request::Get("/a"), asio::bind_executor(io, asio::use_future));
  Result<Response> by_future = future.get();
  ASSERT_TRUE(by_future);
  EXPECT_EQ(by_future->status, 204);

  // Deferred: nothing is sent until the operation is started.
  CountingSender counting(*client);
  auto op = AsyncSend(counting, Request::Get("/b"), asio::deferred);
  EXPECT_EQ(counting.sent, 0);
  std::promise<int> status;
  std::move(op)(asio::bind_executor(
      io, [&](std::exception_ptr, Result<Response> r) { status.set_value(r ? r->status : -1); }));
  EXPECT_EQ(counting.sent, 1);
  EXPECT_EQ(status.get_future().get(), 204);

  guard.reset();
  runner.join();
}

}  // namespace
}  // namespace outbound::http
