// SPDX-License-Identifier: Apache-2.0
// Hedging (Settings::hedging) in fake time, on the kit's FakeTransport: a
// slow first attempt gets a hedge after the delay, the first answer wins
// and the other is cancelled; no hedge for a request that is not safe to
// send twice, for a call whose remaining time is shorter than the delay, or
// when the retry budget or the hedge share is spent; the percentile delay
// follows the observed latency; the attempts in flight stay within their
// bound; records, spans and outbound.retry.decisions say which attempt was
// a hedge and which lost.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "client_test_support.h"
#include "outbound/http/auth.h"
#include "outbound/http/body_pipe.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http {
namespace {

using retry::ReasonKind;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

constexpr Duration kSlow = seconds(1);
constexpr Duration kFast = milliseconds(10);

class HedgingTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  HedgingTest() {
    runtime.telemetry = recorded.telemetry();
    // Each path's first attempt is slow, any later one fast, unless a test
    // says otherwise.
    Serve([this](const ServerRequest& request) {
      std::lock_guard lock(mu_);
      arrivals_.push_back(clock.Now());
      int seen = seen_[request.target]++;
      return Reply::Ok(request.target).DelayHeaders(seen == 0 ? first_ : later_);
    });
  }

  Settings Hedged(Hedging hedging) {
    Settings s = PaymentsSettings();
    s.hedging = hedging;
    return s;
  }

  struct Ended {
    Result<Response> result = Fail(ErrorKind::kCancelled, "not ended");
    Duration took{0};
  };

  // Sends `request` on this thread and moves the clock a millisecond at a
  // time until its callback has run (at most `limit` of fake time). The
  // callback comes from the client's loop: once an attempt's record says
  // it ended the call (not a retry, a wait for a hedge, or a loss to
  // another attempt), the clock waits for it.
  Ended Run(Client& client, Request request, Duration limit = seconds(5)) {
    auto ended = std::make_shared<std::promise<Ended>>();
    TimePoint start = clock.Now();
    std::size_t records = Attempts().size();
    client.SendAsync(std::move(request),
                     [this, ended, start](Result<Response> result, std::exception_ptr) {
                       ended->set_value(Ended{std::move(result), clock.Now() - start});
                     });
    auto future = ended->get_future();
    while (future.wait_for(Duration::zero()) != std::future_status::ready &&
           clock.Now() - start < limit) {
      clock.Advance(milliseconds(1));
      auto now = Attempts();
      for (; records < now.size(); ++records) {
        const AttemptRecord& r = now[records];
        if (r.decision != retry::DecisionKind::kAgain &&
            r.reason.kind != ReasonKind::kHedgeInFlight && r.reason.kind != ReasonKind::kHedgeWon) {
          (void)future.wait_for(seconds(5));
        }
      }
    }
    EXPECT_EQ(future.wait_for(seconds(10)), std::future_status::ready);
    return future.get();
  }

  void AnswerFirst(Duration first, Duration later) {
    std::lock_guard lock(mu_);
    first_ = first;
    later_ = later;
  }

  std::vector<TimePoint> Arrivals() {
    std::lock_guard lock(mu_);
    return arrivals_;
  }

  double Counted(std::string_view decision, std::string_view reason) {
    return recorded.Value("outbound.retry.decisions", {{"decision", decision}, {"reason", reason}});
  }

  testing::InMemoryTelemetry recorded{DefaultRandom()};
  std::mutex mu_;
  std::map<std::string, int> seen_;  // guarded by mu_
  std::vector<TimePoint> arrivals_;  // guarded by mu_
  Duration first_ = kSlow;           // guarded by mu_
  Duration later_ = kFast;           // guarded by mu_
};

TEST_F(HedgingTest, BadSettingsAreRefusedByTheCheck) {
  EXPECT_TRUE(CheckHedging(std::nullopt));
  EXPECT_TRUE(CheckHedging(Hedging{}));
  EXPECT_FALSE(CheckHedging(Hedging{.delay = Duration::zero()}));
  EXPECT_FALSE(CheckHedging(Hedging{.percentile = 1.0}));
  EXPECT_FALSE(CheckHedging(Hedging{.percentile = 0.2}));
  EXPECT_FALSE(CheckHedging(Hedging{.max_attempts_in_flight = 1}));
  EXPECT_FALSE(CheckHedging(Hedging{.max_extra_share = 0}));
  Settings s = Hedged(Hedging{.max_attempts_in_flight = 11});
  auto valid = Validate(s);
  ASSERT_FALSE(valid);
  EXPECT_NE(valid.error().message().find("Settings.hedging"), std::string::npos);
  // A hedge is an attempt: with one attempt in all, none is ever sent.
  s = Hedged(Hedging{});
  s.max_attempts = 1;
  valid = Validate(s);
  ASSERT_FALSE(valid);
  EXPECT_NE(valid.error().message().find("Settings.hedging: max_attempts is 1"), std::string::npos);
  // Unless a route raises it: that route's calls hedge.
  s.routes = {{.path_prefix = "/search", .max_attempts = 3}};
  EXPECT_TRUE(Validate(s));
}

TEST_F(HedgingTest, ASlowFirstAnswerIsHedgedAndTheHedgesAnswerWins) {
  auto client = MakeClient(Hedged(Hedging{.delay = milliseconds(50)}));
  Ended call = Run(*client, Request::Get("/cart"));
  ASSERT_TRUE(call.result) << call.result.error().message();
  EXPECT_EQ(call.result->status, 200);
  // The hedge started at 50ms and answered 10ms later; the first attempt's
  // second of waiting was cut short.
  EXPECT_EQ(call.took, milliseconds(60));
  ASSERT_EQ(server->request_count(), 2u);
  EXPECT_EQ(Arrivals()[1] - Arrivals()[0], milliseconds(50));
  EXPECT_EQ(server->cancelled(), 1);

  // The winner's record first, then the loser's.
  auto records = Attempts();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].attempt, 2);
  EXPECT_TRUE(records[0].hedge);
  EXPECT_EQ(records[0].reason.kind, ReasonKind::kSuccess);
  EXPECT_EQ(records[1].attempt, 1);
  EXPECT_FALSE(records[1].hedge);
  EXPECT_EQ(records[1].reason.kind, ReasonKind::kHedgeWon);
  ASSERT_TRUE(records[1].error);
  EXPECT_EQ(*records[1].error, ErrorKind::kCancelled);

  EXPECT_EQ(Counted("again", "hedge"), 1);
  EXPECT_EQ(Counted("stopped", "hedge_won"), 1);
  EXPECT_EQ(Counted("success", "success"), 1);

  int hedge_spans = 0;
  for (const auto& span : recorded.Spans(telemetry::SpanKind::kClient)) {
    const telemetry::Value* hedge = telemetry::Find(span.attributes, "outbound.attempt.hedge");
    if (hedge != nullptr && std::get<bool>(*hedge)) ++hedge_spans;
  }
  EXPECT_EQ(hedge_spans, 1);
}

TEST_F(HedgingTest, AFastAnswerHasNoHedge) {
  AnswerFirst(kFast, kFast);
  auto client = MakeClient(Hedged(Hedging{.delay = milliseconds(50)}));
  Ended call = Run(*client, Request::Get("/cart"));
  ASSERT_TRUE(call.result);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(Counted("again", "hedge"), 0);
}

TEST_F(HedgingTest, OffThereIsNoHedge) {
  auto client = MakeClient(PaymentsSettings());
  Ended call = Run(*client, Request::Get("/cart"));
  ASSERT_TRUE(call.result);
  EXPECT_EQ(call.took, kSlow);
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(HedgingTest, ARequestNotSafeToSendTwiceHasNoHedge) {
  auto client = MakeClient(Hedged(Hedging{.delay = milliseconds(50)}));
  Ended post = Run(*client, Request::Post("/orders", "{}"));
  ASSERT_TRUE(post.result);
  EXPECT_EQ(post.took, kSlow);
  EXPECT_EQ(server->request_count(), 1u);

  // An idempotent method, but a pipe's body: never sent twice at once.
  auto pipe = std::make_shared<BodyPipe>(8);
  ASSERT_TRUE(pipe->Write("ab"));
  pipe->Close();
  Ended streamed = Run(*client, Request::Put("/notes/1").StreamBodyFromPipe(pipe));
  ASSERT_TRUE(streamed.result) << streamed.result.error().message();
  EXPECT_EQ(streamed.took, kSlow);
  EXPECT_EQ(server->request_count(), 2u);
  EXPECT_EQ(Counted("again", "hedge"), 0);
}

TEST_F(HedgingTest, NoHedgeThatCannotFinishWithinTheCallsTime) {
  auto client = MakeClient(Hedged(Hedging{.delay = milliseconds(50)}));
  // At 50ms, 30ms of the call are left: less than the delay.
  Ended call = Run(*client, Request::Get("/cart").WithTimeout(milliseconds(80)));
  ASSERT_FALSE(call.result);
  EXPECT_EQ(call.result.error().kind(), ErrorKind::kDeadline);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(Counted("again", "hedge"), 0);
  EXPECT_EQ(Counted("expired", "hedge"), 1) << "the refused hedge is counted";
}

TEST_F(HedgingTest, AHedgeSpendsTheRetryBudget) {
  Settings s = Hedged(Hedging{.delay = milliseconds(50)});
  // 3 tokens, a retry allowed above 1.5: each hedge takes one, each
  // success gives back 0.1, so two hedges leave 1.2.
  s.retry_budget = retry::BudgetConfig{.max_tokens = 3, .token_ratio = 0.1};
  auto client = MakeClient(std::move(s));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Run(*client, Request::Get(NumberedPath(i))).result);
  EXPECT_EQ(server->request_count(), 5u);
  EXPECT_EQ(Counted("again", "hedge"), 2);
  EXPECT_EQ(Counted("throttled", "hedge"), 1) << "the third call's hedge, refused";
}

TEST_F(HedgingTest, TheHedgeShareBoundsTheExtraLoad) {
  Settings s = Hedged(Hedging{.delay = milliseconds(50), .max_extra_share = 0.05});
  s.retry_budget = retry::BudgetConfig{.max_tokens = 1000, .token_ratio = 1};
  auto client = MakeClient(std::move(s));
  // The share starts full (kHedgeBurst): that many slow calls are hedged,
  // then no more until calls have earned one (20 at 5 %).
  int path = 0;
  for (int i = 0; i < kHedgeBurst + 1; ++i) {
    ASSERT_TRUE(Run(*client, Request::Get(NumberedPath(path++))).result);
  }
  EXPECT_EQ(Counted("again", "hedge"), kHedgeBurst);
  EXPECT_EQ(Counted("throttled", "hedge"), 1) << "the share refused the last call's";
  EXPECT_EQ(server->request_count(), 2u * kHedgeBurst + 1);
  AnswerFirst(kFast, kFast);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Run(*client, Request::Get(NumberedPath(path++))).result);
  AnswerFirst(kSlow, kFast);
  Ended hedged = Run(*client, Request::Get(NumberedPath(path++)));
  ASSERT_TRUE(hedged.result);
  EXPECT_EQ(hedged.took, milliseconds(60));
  EXPECT_EQ(Counted("again", "hedge"), kHedgeBurst + 1);
}

TEST_F(HedgingTest, ThePercentileDelayFollowsTheObservedLatency) {
  // A share of one hedge a call: this test is about the delay alone.
  Settings s = Hedged(Hedging{.delay = milliseconds(500), .percentile = 0.9, .max_extra_share = 1});
  s.retry_budget = retry::BudgetConfig{.max_tokens = 1000, .token_ratio = 1};
  auto client = MakeClient(std::move(s));
  // Too few samples: the fixed delay.
  ASSERT_EQ(Run(*client, Request::Get("/first")).took, milliseconds(510));

  int path = 0;
  AnswerFirst(milliseconds(20), milliseconds(20));
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(Run(*client, Request::Get(NumberedPath(path++))).result);
  AnswerFirst(kSlow, milliseconds(20));
  std::size_t before = Arrivals().size();
  Ended call = Run(*client, Request::Get(NumberedPath(path++)));
  ASSERT_TRUE(call.result);
  // The 90th percentile of answers in 20ms is 20ms.
  ASSERT_EQ(Arrivals().size(), before + 2);
  EXPECT_EQ(Arrivals()[before + 1] - Arrivals()[before], milliseconds(20));
  EXPECT_EQ(call.took, milliseconds(40));

  // The dependency slows to 200ms: once those are more than a tenth of the
  // window, the delay follows.
  AnswerFirst(milliseconds(200), milliseconds(200));
  for (int i = 0; i < 150; ++i)
    ASSERT_TRUE(Run(*client, Request::Get(NumberedPath(path++))).result);
  AnswerFirst(kSlow, milliseconds(200));
  before = Arrivals().size();
  call = Run(*client, Request::Get(NumberedPath(path++)));
  ASSERT_TRUE(call.result);
  ASSERT_EQ(Arrivals().size(), before + 2);
  EXPECT_EQ(Arrivals()[before + 1] - Arrivals()[before], milliseconds(200));
}

TEST_F(HedgingTest, TheAttemptsInFlightStayWithinTheirBound) {
  Settings s = Hedged(Hedging{.delay = milliseconds(50), .max_attempts_in_flight = 3});
  s.max_attempts = 5;
  auto client = MakeClient(std::move(s));
  Serve([this](const ServerRequest&) {
    std::lock_guard lock(mu_);
    arrivals_.push_back(clock.Now());
    return Reply::Ok().DelayHeaders(kSlow);
  });
  Ended call = Run(*client, Request::Get("/cart"));
  ASSERT_TRUE(call.result);
  // Hedges at 50 and 100ms, then three in flight: no more; the first
  // answer, at 1s, wins.
  EXPECT_EQ(server->request_count(), 3u);
  EXPECT_EQ(call.took, kSlow);
  EXPECT_EQ(server->cancelled(), 2);
  EXPECT_EQ(Counted("again", "hedge"), 2);
  EXPECT_EQ(Counted("stopped", "hedge_won"), 2);
}

TEST_F(HedgingTest, AHedgeCountsAsAnAttemptOfMaxAttempts) {
  Settings s = Hedged(Hedging{.delay = milliseconds(50), .max_attempts_in_flight = 3});
  s.max_attempts = 2;
  auto client = MakeClient(std::move(s));
  Serve([](const ServerRequest&) { return Reply::Ok().DelayHeaders(kSlow); });
  ASSERT_TRUE(Run(*client, Request::Get("/cart")).result);
  EXPECT_EQ(server->request_count(), 2u);
  EXPECT_EQ(Counted("exhausted", "hedge"), 1) << "a second hedge, refused";
}

TEST_F(HedgingTest, AFailureWhileTheHedgeIsInFlightWaitsForIt) {
  auto client = MakeClient(Hedged(Hedging{.delay = milliseconds(50)}));
  // The first attempt fails (retryable) at 100ms; the hedge, sent at 50ms,
  // answers at 350ms. No third attempt: the call waits for the hedge.
  Serve([this](const ServerRequest&) {
    std::lock_guard lock(mu_);
    arrivals_.push_back(clock.Now());
    return arrivals_.size() == 1 ? Reply::Status(503).DelayHeaders(milliseconds(100))
                                 : Reply::Ok("late").DelayHeaders(milliseconds(300));
  });
  Ended call = Run(*client, Request::Get("/cart"));
  ASSERT_TRUE(call.result);
  EXPECT_EQ(call.result->body, "late");
  EXPECT_EQ(call.took, milliseconds(350));
  EXPECT_EQ(server->request_count(), 2u);
  auto records = Attempts();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].status, 503);
  EXPECT_EQ(records[0].reason.kind, ReasonKind::kHedgeInFlight);
  EXPECT_EQ(records[1].reason.kind, ReasonKind::kSuccess);
  EXPECT_EQ(Counted("stopped", "hedge_in_flight"), 1);
}

// A Retry-After heard while the hedge was in flight is the least wait of
// the retry that follows, though the hedge's failure, which has none,
// decides it.
TEST_F(HedgingTest, ARetryAfterHeardWhileTheHedgeIsInFlightHoldsForTheRetry) {
  auto client = MakeClient(Hedged(Hedging{.delay = milliseconds(50)}));
  // The first attempt: 429, Retry-After 1, at 100ms; the hedge, sent at
  // 50ms: 503 at 200ms; then the retry.
  Serve([this](const ServerRequest&) {
    std::lock_guard lock(mu_);
    arrivals_.push_back(clock.Now());
    switch (arrivals_.size()) {
      case 1:
        return Reply::Status(429).Header("Retry-After", "1").DelayHeaders(milliseconds(100));
      case 2:
        return Reply::Status(503).DelayHeaders(milliseconds(150));
      default:
        return Reply::Ok("retried");
    }
  });
  Ended call = Run(*client, Request::Get("/cart"));
  ASSERT_TRUE(call.result) << call.result.error().message();
  EXPECT_EQ(call.result->body, "retried");
  auto arrivals = Arrivals();
  ASSERT_EQ(arrivals.size(), 3u);
  // A second from the 429, which came 100 ms after the first attempt went:
  // no earlier, and not a second from the hedge's end either.
  EXPECT_GE(arrivals[2] - arrivals[0], milliseconds(100) + seconds(1));
  EXPECT_LT(arrivals[2] - arrivals[0], milliseconds(200) + seconds(1));
}

// A failure that waits for the hedge in flight spends no retry: with the
// budget's tokens low, the floor's one retry a second is still there for
// the next call that needs it.
TEST_F(HedgingTest, AFailureWaitingForTheHedgeLeavesTheBudgetsFloorAlone) {
  Settings s = Hedged(Hedging{.delay = milliseconds(50)});
  // 3 tokens, a retry allowed above 1.5: the hedge takes one and the
  // failure one, and the hedge's success gives back 0.1 (1.1 left).
  s.retry_budget =
      retry::BudgetConfig{.max_tokens = 3, .token_ratio = 0.1, .min_retries_per_second = 1};
  auto client = MakeClient(std::move(s));
  Serve([this](const ServerRequest&) {
    std::lock_guard lock(mu_);
    arrivals_.push_back(clock.Now());
    switch (arrivals_.size()) {
      case 1:
        return Reply::Status(503).DelayHeaders(milliseconds(100));
      case 2:
        return Reply::Ok("hedged").DelayHeaders(milliseconds(300));
      case 3:
        return Reply::Status(503);
      default:
        return Reply::Ok("retried");
    }
  });
  Ended first = Run(*client, Request::Get("/cart/1"));
  ASSERT_TRUE(first.result);
  EXPECT_EQ(first.result->body, "hedged");
  // 0.1 tokens: this call's retry is the floor's, within the same second.
  Ended second = Run(*client, Request::Get("/cart/2"));
  ASSERT_TRUE(second.result);
  EXPECT_EQ(second.result->body, "retried");
  EXPECT_EQ(Counted("again", "retryable"), 1);
}

// A repeat with a refreshed credential (WithBearerToken after a 401)
// supersedes the hedge in flight, which went with the stale one: the
// hedge's 401 loses to the repeat and does not end the call.
TEST_F(HedgingTest, ARepeatWithAFreshCredentialSupersedesTheHedgeInFlight) {
  Settings s = Hedged(Hedging{.delay = milliseconds(100)});
  s.attempt_middleware = {
      WithBearerToken([](bool refresh) { return std::string(refresh ? "fresh" : "stale"); })};
  auto client = MakeClient(std::move(s));
  // The first attempt at 0 and the hedge at 100 carry the stale token: 401
  // after 300 ms each. The repeat, at 300 with the fresh one: 200 at 600.
  Serve([](const ServerRequest& request) {
    if (request.header("Authorization") == "Bearer fresh") {
      return Reply::Ok("in").DelayHeaders(milliseconds(300));
    }
    return Reply::Status(401).Header("WWW-Authenticate", "Bearer").DelayHeaders(milliseconds(300));
  });
  Ended call = Run(*client, Request::Get("/cart"));
  ASSERT_TRUE(call.result) << call.result.error().message();
  EXPECT_EQ(call.result->status, 200);
  EXPECT_EQ(call.took, milliseconds(600));
  EXPECT_EQ(server->request_count(), 3u);
  EXPECT_EQ(server->cancelled(), 1) << "the stale hedge, cancelled when the repeat went";
  auto records = Attempts();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].reason.kind, ReasonKind::kRepeat);
  EXPECT_EQ(records[1].reason.kind, ReasonKind::kHedgeWon) << "the stale hedge lost";
  EXPECT_EQ(records[2].reason.kind, ReasonKind::kSuccess);
}

TEST_F(HedgingTest, TheDeadlineCancelsEveryAttemptInFlight) {
  auto client = MakeClient(Hedged(Hedging{.delay = milliseconds(50)}));
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  Ended call = Run(*client, Request::Get("/cart").WithTimeout(milliseconds(200)));
  ASSERT_FALSE(call.result);
  EXPECT_EQ(call.result.error().kind(), ErrorKind::kDeadline);
  EXPECT_EQ(call.took, milliseconds(200));
  EXPECT_EQ(server->request_count(), 2u);
  EXPECT_EQ(server->cancelled(), 2);
}

}  // namespace
}  // namespace outbound::http
