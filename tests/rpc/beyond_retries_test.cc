// SPDX-License-Identifier: Apache-2.0
// The gRPC client on the one call core, for what docs/beyond-retries.md
// describes: the reason for each retry decision in each attempt's span and
// in outbound.retry.decisions, and an operator's control of the breaker
// (Client::OverrideBreaker), and the bulkhead and rate limit the gRPC
// client shares with HTTP's. On the kit's FakeTransport, in fake time.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../testing/loaded_dependency.h"
#include "methods.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fake_transport.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/telemetry.h"

namespace outbound::rpc {
namespace {

using std::chrono::seconds;

class BeyondRetriesRpcTest : public ::testing::Test {
 protected:
  BeyondRetriesRpcTest()
      : transport_(clock_, [this](const testing::ServerRequest&) { return Answer(); }) {
    runtime_.clock = &clock_;
    runtime_.random = &random_;
    runtime_.transport = &transport_;
    runtime_.telemetry = recorded_.telemetry();
  }

  // OK with one empty message; any other code as a Trailers-Only answer.
  static testing::Reply Grpc(int code) {
    if (code == 0) {
      return testing::Reply::Ok(std::string(5, '\0'))
          .Header("content-type", "application/grpc")
          .Trailer("grpc-status", "0");
    }
    return testing::Reply::Ok()
        .Header("content-type", "application/grpc")
        .Header("grpc-status", std::to_string(code));
  }

  testing::Reply Answer() {
    std::lock_guard lock(mu_);
    testing::Reply reply = Grpc(code_);
    if (delay_ > Duration::zero()) reply.DelayHeaders(delay_);
    return reply;
  }
  void DelayAnswersBy(Duration delay) {
    std::lock_guard lock(mu_);
    delay_ = delay;
  }

  // Starts a call; its reply is the future's.
  static std::future<Reply> Start(Client& client, std::string_view method) {
    auto replied = std::make_shared<std::promise<Reply>>();
    client.CallAsync(method, "x", [replied](Reply reply, std::exception_ptr) {
      replied->set_value(std::move(reply));
    });
    return replied->get_future();
  }
  // Whether a call's reply came without the clock moving (a rejection is
  // said from the client's loop: a real wait, bounded).
  static bool Ready(const std::future<Reply>& reply) {
    return reply.wait_for(seconds(5)) == std::future_status::ready;
  }
  void AnswerWith(int code) {
    std::lock_guard lock(mu_);
    code_ = code;
  }

  std::unique_ptr<Client> Make(Settings settings = DefaultSettings()) {
    settings.addr = "carts:9090";
    settings.non_idempotent_methods = {kCharge};
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  // Makes a call and moves the clock to each backoff as it begins: a timer
  // due within a second (the attempt's timeout and the call's deadline are
  // further off, so they never fire early however slowly the call runs).
  Reply Drive(Client& client, std::string_view method) {
    std::promise<Reply> replied;
    client.CallAsync(method, "x",
                     [&](Reply reply, std::exception_ptr) { replied.set_value(std::move(reply)); });
    auto reply = replied.get_future();
    while (reply.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      std::optional<TimePoint> next = clock_.next_timer();
      if (next && *next <= clock_.Now() + seconds(1)) clock_.AdvanceTo(*next);
    }
    return reply.get();
  }

  std::vector<std::string> SpanReasons() {
    std::vector<std::string> out;
    for (const auto& span : recorded_.Spans(telemetry::SpanKind::kClient)) {
      const telemetry::Value* reason = telemetry::Find(span.attributes, "outbound.retry.reason");
      out.push_back(reason != nullptr ? std::get<std::string>(*reason) : "(none)");
    }
    return out;
  }

  double Counted(std::string_view decision, std::string_view reason) {
    return recorded_.Value("outbound.retry.decisions",
                           {{"decision", decision}, {"reason", reason}});
  }

  testing::ManualClock clock_;
  testing::FixedRandom random_{0.0};
  testing::InMemoryTelemetry recorded_{DefaultRandom()};
  std::mutex mu_;
  int code_ = 0;       // guarded by mu_
  Duration delay_{0};  // guarded by mu_
  testing::FakeTransport transport_;
  Runtime runtime_;
};

TEST_F(BeyondRetriesRpcTest, EachAttemptsSpanAndTheCounterSayWhyItWasOrWasNotRetried) {
  AnswerWith(14);  // UNAVAILABLE
  auto client = Make();
  EXPECT_EQ(Drive(*client, kGet).status.code, Code::kUnavailable);
  EXPECT_EQ(SpanReasons(), (std::vector<std::string>{"retryable", "retryable", "exhausted"}));
  EXPECT_EQ(Counted("again", "retryable"), 2);
  EXPECT_EQ(Counted("exhausted", "exhausted"), 1);
}

TEST_F(BeyondRetriesRpcTest, ANonIdempotentMethodSaysUnsafe) {
  AnswerWith(14);
  auto client = Make();
  EXPECT_EQ(Drive(*client, kCharge).status.code, Code::kUnavailable);
  EXPECT_EQ(transport_.request_count(), 1U);
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"unsafe"});
  EXPECT_EQ(Counted("stopped", "unsafe"), 1);
}

// grpc-java spells a full name without its leading '/' ("pkg.Service/Method");
// the request's path gains it, and so must the lookup of the method's safety.
TEST_F(BeyondRetriesRpcTest, ANonIdempotentMethodNamedWithoutItsSlashIsStillSentOnce) {
  AnswerWith(14);
  auto client = Make();
  EXPECT_EQ(Drive(*client, std::string_view(kCharge).substr(1)).status.code, Code::kUnavailable);
  EXPECT_EQ(transport_.request_count(), 1U);
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"unsafe"});
}

TEST_F(BeyondRetriesRpcTest, ASuccessAndAStatusTheClassifierStopsOnSaySo) {
  auto client = Make();
  EXPECT_TRUE(Drive(*client, kGet).status.ok());
  AnswerWith(3);  // INVALID_ARGUMENT
  EXPECT_EQ(Drive(*client, kGet).status.code, Code::kInvalidArgument);
  EXPECT_EQ(SpanReasons(), (std::vector<std::string>{"success", "classify"}));
  EXPECT_EQ(Counted("success", "success"), 1);
  EXPECT_EQ(Counted("stopped", "classify"), 1);
}

TEST_F(BeyondRetriesRpcTest, AForcedOpenClientFailsAtOnceWithTheBreakerErrorAndSendsNothing) {
  auto client = Make();
  client->OverrideBreaker(circuit::Override::kForceOpen);
  Reply reply = Drive(*client, kGet);
  EXPECT_TRUE(reply.status.rejected);
  EXPECT_EQ(reply.status.code, Code::kUnavailable);
  EXPECT_EQ(transport_.request_count(), 0U);
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"rejected"});
  EXPECT_EQ(recorded_.Value("outbound.circuit.overrides", {{"override", "force_open"}}), 1);
}

TEST_F(BeyondRetriesRpcTest, ForcedClosedSendsWhileFailuresWouldOpenIt) {
  AnswerWith(14);
  Settings s = DefaultSettings();
  s.max_attempts = 1;
  auto client = Make(std::move(s));
  client->OverrideBreaker(circuit::Override::kForceClosed);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(Drive(*client, kGet).status.rejected);
  EXPECT_EQ(transport_.request_count(), 10U);
  EXPECT_EQ(recorded_.Value("outbound.circuit.state", {{"state", "forced-closed"}}), 1);
  client->OverrideBreaker(circuit::Override::kRelease);
  Drive(*client, kGet);  // its rules again: this failure opens it
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kOpen);
}

TEST_F(BeyondRetriesRpcTest, IsolateSendsNoProbeUntilReleased) {
  auto client = Make();
  client->OverrideBreaker(circuit::Override::kIsolate);
  for (int i = 0; i < 60; ++i) {
    clock_.Advance(seconds(10));
    EXPECT_TRUE(Drive(*client, kGet).status.rejected);
  }
  EXPECT_EQ(transport_.request_count(), 0U);
  EXPECT_EQ(recorded_.Value("outbound.circuit.state", {{"state", "isolated"}}), 1);
  client->OverrideBreaker(circuit::Override::kRelease);
  EXPECT_TRUE(Drive(*client, kGet).status.ok());
  EXPECT_EQ(transport_.request_count(), 1U);
  auto logs = recorded_.Logs();
  int overrides = 0;
  for (const auto& log : logs) overrides += log.body.rfind("circuit breaker override", 0) == 0;
  EXPECT_EQ(overrides, 2);
}

// The core's kRejected is UNAVAILABLE with Status::rejected set, as a
// breaker's rejection is (rpc/settings.h, Settings::bulkhead).
TEST_F(BeyondRetriesRpcTest, ACallOverTheBulkheadEndsAtOnceUnavailableRejectedUnsentAndUncounted) {
  DelayAnswersBy(std::chrono::milliseconds(100));
  Settings s = DefaultSettings();
  s.bulkhead = http::Bulkhead{.max_calls = 2};
  auto client = Make(std::move(s));
  auto first = Start(*client, kGet);
  auto second = Start(*client, kGet);
  auto third = Start(*client, kGet);
  ASSERT_TRUE(Ready(third));  // the clock has not moved
  Reply over = third.get();
  EXPECT_EQ(over.status.code, Code::kUnavailable);
  EXPECT_TRUE(over.status.rejected);
  EXPECT_EQ(over.status.message,
            "carts:9090: the bulkhead is full (2 calls in flight): nothing was sent");
  EXPECT_EQ(transport_.request_count(), 2U);
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_TRUE(first.get().status.ok());
  EXPECT_TRUE(second.get().status.ok());
  // The breaker counted the two answered attempts and nothing else: no
  // attempt, no span, for the rejection.
  EXPECT_EQ(recorded_.Value("outbound.circuit.calls", {{"outcome", "success"}}), 2);
  EXPECT_EQ(recorded_.Value("outbound.circuit.calls", {{"outcome", "failure"}}), 0);
  EXPECT_EQ(recorded_.Spans(telemetry::SpanKind::kClient).size(), 2U);
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
}

TEST_F(BeyondRetriesRpcTest, ManyRejectionsByTheBulkheadNeverOpenTheBreaker) {
  DelayAnswersBy(std::chrono::milliseconds(100));
  Settings s = DefaultSettings();
  s.bulkhead = http::Bulkhead{.max_calls = 1};
  s.breaker.window = 5;
  auto client = Make(std::move(s));
  auto held = Start(*client, kGet);
  for (int i = 0; i < 20; ++i) {
    auto rejected = Start(*client, kGet);
    ASSERT_TRUE(Ready(rejected));
    EXPECT_TRUE(rejected.get().status.rejected);
  }
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_TRUE(held.get().status.ok());
  EXPECT_EQ(transport_.request_count(), 1U);
}

TEST_F(BeyondRetriesRpcTest, AQueuedCallProceedsWhenACallEnds) {
  DelayAnswersBy(std::chrono::milliseconds(100));
  Settings s = DefaultSettings();
  s.bulkhead = http::Bulkhead{.max_calls = 1, .max_queued = 1, .max_wait = seconds(1)};
  auto client = Make(std::move(s));
  TimePoint start = clock_.Now();
  auto first = Start(*client, kGet);
  auto queued = Start(*client, kGet);
  auto full = Start(*client, kGet);  // the queue is full
  ASSERT_TRUE(Ready(full));
  Reply rejected = full.get();
  EXPECT_TRUE(rejected.status.rejected);
  EXPECT_NE(rejected.status.message.find("(1 calls in flight, 1 waiting)"), std::string::npos)
      << rejected.status.message;
  EXPECT_EQ(transport_.request_count(), 1U);
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_TRUE(first.get().status.ok());
  EXPECT_EQ(transport_.request_count(), 2U);  // the queued call took the place
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_TRUE(queued.get().status.ok());
  EXPECT_EQ(clock_.Now() - start, std::chrono::milliseconds(200));
}

TEST_F(BeyondRetriesRpcTest, TheRateLimitHoldsACallForItsTokenAndEndsOneThatCannotWait) {
  Settings s = DefaultSettings();
  s.rate_limit = http::RateLimit{.per_second = 1, .burst = 1};
  auto client = Make(std::move(s));
  EXPECT_TRUE(Drive(*client, kGet).status.ok());
  auto waiting = Start(*client, kGet);
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  EXPECT_EQ(transport_.request_count(), 1U);
  clock_.Advance(seconds(1));
  EXPECT_TRUE(waiting.get().status.ok());
  EXPECT_EQ(transport_.request_count(), 2U);
  // The next token is a second off: a call with 100ms left cannot wait.
  std::promise<Reply> replied;
  client->CallAsync(
      kGet, "x", [&](Reply reply, std::exception_ptr) { replied.set_value(std::move(reply)); },
      Context{.deadline = clock_.Now() + std::chrono::milliseconds(100)});
  auto late = replied.get_future();
  ASSERT_TRUE(Ready(late));
  EXPECT_EQ(late.get().status.code, Code::kDeadlineExceeded);
  EXPECT_EQ(transport_.request_count(), 2U);
}

// Adaptive concurrency, gRPC's way in (rpc::Settings::adaptive_concurrency):
// against a dependency of 20 workers at 10 ms (loaded_dependency.h), under
// twice its capacity, the limit settles in [20, 30], the range the design
// must reach (tests/http/adaptive_concurrency_test.cc derives it), calls
// over it end UNAVAILABLE rejected without reaching it, and a timeout
// halves it.
class AdaptiveConcurrencyRpcTest : public BeyondRetriesRpcTest {
 protected:
  AdaptiveConcurrencyRpcTest()
      : loaded_transport_(clock_, [this](const testing::ServerRequest&) {
          auto arrival = dependency_.Arrive();
          if (arrival.hang) return testing::Reply::Hang();
          return Grpc(0).DelayHeaders(arrival.delay);
        }) {
    runtime_.transport = &loaded_transport_;
  }

  std::unique_ptr<Client> Adaptive(Duration timeout) {
    Settings s = DefaultSettings();
    s.adaptive_concurrency = http::AdaptiveConcurrency{.initial_limit = 10};
    s.timeout = timeout;
    return Make(std::move(s));
  }

  testing::OpenLoad Load(Client& client) {
    return testing::OpenLoad(clock_, [&client](std::function<void(bool)> ended) {
      client.CallAsync(kGet, "x",
                       [ended](Reply reply, std::exception_ptr) { ended(reply.status.rejected); });
    });
  }

  double Limit() const { return recorded_.Value("outbound.concurrency.limit"); }

  testing::LoadedDependency dependency_{clock_, std::chrono::milliseconds(10), 20};
  testing::FakeTransport loaded_transport_;
};

TEST_F(AdaptiveConcurrencyRpcTest, TheLimitSettlesNearTheKneeAndRejectsTheRestUnsent) {
  auto client = Adaptive(seconds(10));
  testing::OpenLoad load = Load(*client);
  load.Run(3000, 4, std::chrono::milliseconds(1));
  dependency_.TakeMaxInFlight();
  TimePoint from = clock_.Now();
  std::vector<double> limits;
  int ticks = 0;
  load.Run(5000, 4, std::chrono::milliseconds(1), [&] {
    if (++ticks % 100 == 0) limits.push_back(Limit());
  });
  TimePoint to = clock_.Now();
  int held = dependency_.TakeMaxInFlight();
  ASSERT_TRUE(load.Drain());
  for (double limit : limits) {
    EXPECT_GE(limit, 20);
    EXPECT_LE(limit, 30);
  }
  EXPECT_EQ(dependency_.arrived() + load.rejected(), load.issued());
  EXPECT_GT(load.rejected(), load.issued() / 3);
  EXPECT_LE(held, 30);
  std::vector<Duration> answers = dependency_.AnswersBetween(from, to);
  EXPECT_GE(answers.size(), 0.9 * 2000 * 5);  // 90% of its capacity, 2000 a second
  EXPECT_LE(testing::Quantile(answers, 0.99), std::chrono::milliseconds(20));
  EXPECT_EQ(recorded_.Value("outbound.circuit.calls", {{"outcome", "failure"}}), 0);
}

TEST_F(AdaptiveConcurrencyRpcTest, ATimeoutHalvesTheLimit) {
  auto client = Adaptive(std::chrono::milliseconds(100));
  testing::OpenLoad load = Load(*client);
  load.Run(3000, 4, std::chrono::milliseconds(1));
  double settled = Limit();
  ASSERT_GE(settled, 20);
  dependency_.Hang(true);
  load.Run(300, 4, std::chrono::milliseconds(1));
  EXPECT_LE(Limit(), settled / 2);
  dependency_.Hang(false);
  ASSERT_TRUE(load.Drain());
}

}  // namespace
}  // namespace outbound::rpc
