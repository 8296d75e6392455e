// SPDX-License-Identifier: Apache-2.0
// The reason for every retry decision: each attempt's record, its span
// (outbound.retry.reason) and outbound.retry.decisions (by decision and
// reason) say which rule decided what followed it. On the kit's
// FakeTransport, in fake time.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "client_test_support.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http {
namespace {

using retry::DecisionKind;
using retry::ReasonKind;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

class DecisionReasonTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  DecisionReasonTest() { runtime.telemetry = recorded.telemetry(); }

  std::vector<ReasonKind> Reasons() {
    std::vector<ReasonKind> out;
    for (const AttemptRecord& record : Attempts()) out.push_back(record.reason.kind);
    return out;
  }

  // The reason each attempt's span carries, in order.
  std::vector<std::string> SpanReasons() {
    std::vector<std::string> out;
    for (const auto& span : recorded.Spans(telemetry::SpanKind::kClient)) {
      const telemetry::Value* reason = telemetry::Find(span.attributes, "outbound.retry.reason");
      out.push_back(reason != nullptr ? std::get<std::string>(*reason) : "(none)");
    }
    return out;
  }

  double Counted(std::string_view decision, std::string_view reason) {
    return recorded.Value("outbound.retry.decisions", {{"decision", decision}, {"reason", reason}});
  }

  testing::InMemoryTelemetry recorded{DefaultRandom()};
};

TEST_F(DecisionReasonTest, ASuccessSaysSuccessEverywhere) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(Reasons(), std::vector{ReasonKind::kSuccess});
  EXPECT_EQ(Attempts()[0].decision, DecisionKind::kSuccess);
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"success"});
  EXPECT_EQ(Counted("success", "success"), 1);
}

TEST_F(DecisionReasonTest, RetriesUntilMaxAttemptsSayRetryableThenExhausted) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  auto client = MakeClient();
  ASSERT_TRUE(SendMovingToBackoffs(*client, Request::Get("/")));
  EXPECT_EQ(Reasons(),
            (std::vector{ReasonKind::kRetryable, ReasonKind::kRetryable, ReasonKind::kExhausted}));
  EXPECT_EQ(SpanReasons(), (std::vector<std::string>{"retryable", "retryable", "exhausted"}));
  EXPECT_EQ(Counted("again", "retryable"), 2);
  EXPECT_EQ(Counted("exhausted", "exhausted"), 1);
}

TEST_F(DecisionReasonTest, AnAnswerTheClassifierStopsOnSaysClassify) {
  Serve([](const ServerRequest&) { return Reply::Status(500); });  // kStop by default
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(Reasons(), std::vector{ReasonKind::kClassify});
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"classify"});
  EXPECT_EQ(Counted("stopped", "classify"), 1);
}

TEST_F(DecisionReasonTest, ARetryTheBudgetRefusesSaysBudget) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  Settings s = PaymentsSettings();
  // Three tokens, no floor: the second failure leaves one, under half.
  s.retry_budget = {.max_tokens = 3, .token_ratio = 0.1, .min_retries_per_second = 0};
  auto client = MakeClient(std::move(s));
  ASSERT_TRUE(SendMovingToBackoffs(*client, Request::Get("/")));
  EXPECT_EQ(Reasons(), (std::vector{ReasonKind::kRetryable, ReasonKind::kBudget}));
  EXPECT_EQ(Attempts()[1].decision, DecisionKind::kThrottled);
  EXPECT_EQ(SpanReasons(), (std::vector<std::string>{"retryable", "budget"}));
  EXPECT_EQ(Counted("throttled", "budget"), 1);
}

TEST_F(DecisionReasonTest, TheBudgetsFloorLetsTheRetryThroughItsTokensRefuse) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  Settings s = PaymentsSettings();
  s.retry_budget = {.max_tokens = 3, .token_ratio = 0.1, .min_retries_per_second = 1};
  auto client = MakeClient(std::move(s));
  ASSERT_TRUE(SendMovingToBackoffs(*client, Request::Get("/")));
  // The tokens refuse the second retry; the floor's one a second allows it.
  EXPECT_EQ(Reasons(),
            (std::vector{ReasonKind::kRetryable, ReasonKind::kRetryable, ReasonKind::kExhausted}));
}

TEST_F(DecisionReasonTest, AWaitPastTheDeadlineSaysDeadline) {
  Serve([](const ServerRequest&) { return Reply::Status(503).Header("Retry-After", "2"); });
  Settings s = PaymentsSettings();
  s.timeout = seconds(1);
  auto client = MakeClient(std::move(s));
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(Reasons(), std::vector{ReasonKind::kDeadline});
  EXPECT_EQ(Attempts()[0].decision, DecisionKind::kExpired);
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"deadline"});
  EXPECT_EQ(Counted("expired", "deadline"), 1);
}

TEST_F(DecisionReasonTest, ARetryAfterLongerThanBackoffMaxSaysSo) {
  Serve([](const ServerRequest&) { return Reply::Status(503).Header("Retry-After", "60"); });
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(Reasons(), std::vector{ReasonKind::kRetryAfterTooLong});
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"retry_after_too_long"});
  EXPECT_EQ(Counted("retry_after_too_long", "retry_after_too_long"), 1);
}

TEST_F(DecisionReasonTest, APostThatWouldBeRetriedSaysUnsafe) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Post("/", "x")));
  EXPECT_EQ(Reasons(), std::vector{ReasonKind::kUnsafe});
  EXPECT_EQ(Attempts()[0].decision, DecisionKind::kStopped);
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"unsafe"});
  EXPECT_EQ(Counted("stopped", "unsafe"), 1);
  EXPECT_EQ(server->request_count(), 1U);
}

TEST_F(DecisionReasonTest, ABodyThatCannotBeSentAgainSaysBodyNotReplayable) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  auto client = MakeClient();
  Request put = Request::Put("/", "x");
  put.body_replayable = false;
  ASSERT_TRUE(client->Send(std::move(put)));
  EXPECT_EQ(Reasons(), std::vector{ReasonKind::kBodyNotReplayable});
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"body_not_replayable"});
  EXPECT_EQ(Counted("stopped", "body_not_replayable"), 1);
}

TEST_F(DecisionReasonTest, AnAnswerOverTheRetriedBodyLimitSaysTooLarge) {
  Serve([](const ServerRequest&) { return Reply::Status(503, std::string(65 * 1024, 'x')); });
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(Reasons(), std::vector{ReasonKind::kTooLarge});
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"too_large"});
  EXPECT_EQ(Counted("stopped", "too_large"), 1);
}

TEST_F(DecisionReasonTest, ABreakerRejectionSaysRejectedByTheBreaker) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  client->OverrideBreaker(circuit::Override::kIsolate);
  ASSERT_FALSE(client->Send(Request::Get("/")));
  ASSERT_EQ(Attempts().size(), 1U);
  EXPECT_EQ(Attempts()[0].reason,
            (retry::Reason{ReasonKind::kRejected, retry::Rejecter::kBreaker}));
  auto spans = recorded.Spans(telemetry::SpanKind::kClient);
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(*telemetry::Find(spans[0].attributes, "outbound.retry.rejected_by"),
            telemetry::Value(std::string("breaker")));
  EXPECT_EQ(SpanReasons(), std::vector<std::string>{"rejected"});
  EXPECT_EQ(Counted("stopped", "rejected"), 1);
}

TEST_F(DecisionReasonTest, ARefusedStreamSentAgainAtOnceSaysTransparent) {
  std::atomic<int> seen{0};
  Serve([&](const ServerRequest&) { return ++seen == 2 ? Reply::Reset() : Reply::Ok(); });
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/")));  // earns a transparent retry
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(Reasons(),
            (std::vector{ReasonKind::kSuccess, ReasonKind::kTransparent, ReasonKind::kSuccess}));
  EXPECT_EQ(SpanReasons(), (std::vector<std::string>{"success", "transparent", "success"}));
  EXPECT_EQ(Counted("again", "transparent"), 1);
}

// Refused again and again: the first resend at once (gRPC's A6), each
// later one after a backoff, transparent or not (a resend at once would
// meet the same full server again): three transparent retries, then the
// policy's.
TEST_F(DecisionReasonTest, ARefusedStreamGoesAgainAtOnceOnlyTheFirstTime) {
  std::atomic<int> seen{0};
  Serve([&](const ServerRequest&) {
    int n = ++seen;
    return n > 3 && n <= 7 ? Reply::Reset() : Reply::Ok();
  });
  auto client = MakeClient();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->Send(Request::Get("/")));  // earn three
  auto call = client->SendAsync(Request::Post("/charges", "charge-1"));
  // Refused, sent again at once, refused again: a wait of 50 ms (the
  // backoff after one attempt, jitter one half) with nothing sent.
  ASSERT_TRUE(WaitForAttempts(3 + 2));
  ASSERT_TRUE(clock.WaitForTimers(2));
  EXPECT_EQ(server->request_count(), 3u + 2u);
  clock.Advance(milliseconds(49));
  EXPECT_EQ(server->request_count(), 3u + 2u);
  clock.Advance(milliseconds(1));
  // Refused a third time (the last transparent retry), then 100 ms; refused
  // a fourth, and the policy's first retry waits 50 ms.
  AdvanceAfterAttempt(3 + 3, milliseconds(100));
  AdvanceAfterAttempt(3 + 4, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(server->request_count(), 3u + 5u);
  EXPECT_EQ(Reasons(),
            (std::vector{ReasonKind::kSuccess, ReasonKind::kSuccess, ReasonKind::kSuccess,
                         ReasonKind::kTransparent, ReasonKind::kTransparent,
                         ReasonKind::kTransparent, ReasonKind::kRetryable, ReasonKind::kSuccess}));
}

TEST_F(DecisionReasonTest, AMiddlewaresRepeatSaysRepeat) {
  struct Refresh final : AttemptMiddleware {
    bool RepeatOnce(const Result<Response>& result, const AttemptInfo&) override {
      return result && result->status == 401;
    }
  };
  std::atomic<int> seen{0};
  Serve([&](const ServerRequest&) { return ++seen == 1 ? Reply::Status(401) : Reply::Ok(); });
  Settings s = PaymentsSettings();
  s.attempt_middleware.push_back(std::make_shared<Refresh>());
  auto client = MakeClient(std::move(s));
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(Reasons(), (std::vector{ReasonKind::kRepeat, ReasonKind::kSuccess}));
  EXPECT_EQ(SpanReasons(), (std::vector<std::string>{"repeat", "success"}));
  EXPECT_EQ(Counted("again", "repeat"), 1);
}

TEST(ReasonNames, EachIsSnakeCase) {
  EXPECT_EQ(retry::ToString(ReasonKind::kBodyNotReplayable), "body_not_replayable");
  EXPECT_EQ(retry::ToString(ReasonKind::kRetryAfterTooLong), "retry_after_too_long");
  EXPECT_EQ(retry::ToString(ReasonKind::kTooLarge), "too_large");
  EXPECT_EQ(retry::ToString(retry::Rejecter::kRateLimit), "rate_limit");
}

}  // namespace
}  // namespace outbound::http
