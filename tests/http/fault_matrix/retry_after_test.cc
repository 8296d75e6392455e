// SPDX-License-Identifier: Apache-2.0
// Fault matrix: hostile Retry-After values on a 503 (Retry after
// Retry-After, Failure). RFC 9110 §10.2.3: delay-seconds is 1*DIGIT, or an
// HTTP-date. A malformed value is ignored (the backoff alone paces the
// retries: 50 ms, then 100 ms); a date in the past is a wait of 0; a wait
// longer than BackoffMax (5 s) ends the call with the 503 as it came, after
// one attempt. The client's wall clock reads 2026-01-01T00:00:00Z.
#include "matrix_support.h"

namespace outbound::http::matrix {
namespace {

class RetryAfterMatrix : public BothProtocols {
 protected:
  void Serve503(const std::string& retry_after) {
    Serve([retry_after](const ServerRequest&) {
      return Reply::Status(503).Header("Retry-After", retry_after);
    });
    StartClient();
    Begin(Request::Get("/"));
  }
  void ExpectReturnedAtOnce() {
    ExpectEnds({.status = 503, .attempts = 1, .breaker_failures = 1});
    auto records = Attempts();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].decision, retry::DecisionKind::kRetryAfterTooLong);
  }
  void ExpectPacedByTheBackoff() {
    WaitThenAdvance(50ms);
    WaitThenAdvance(100ms);
    ExpectEnds(
        {.status = 503, .attempts = 3, .server_saw = 3, .breaker_failures = 3, .took = 150ms});
  }
};

TEST_P(RetryAfterMatrix, AHugeNumberIsTooLong) {
  Serve503("99999999999999999999999");
  ExpectReturnedAtOnce();
}

TEST_P(RetryAfterMatrix, ANegativeNumberIsIgnored) {
  Serve503("-5");
  ExpectPacedByTheBackoff();
}

TEST_P(RetryAfterMatrix, GarbageIsIgnored) {
  Serve503("soon, maybe");
  ExpectPacedByTheBackoff();
}

TEST_P(RetryAfterMatrix, ADateInThePastIsNoWait) {
  Serve503("Wed, 21 Oct 2015 07:28:00 GMT");
  ExpectPacedByTheBackoff();
}

TEST_P(RetryAfterMatrix, ADateAYearAheadIsTooLong) {
  Serve503("Fri, 01 Jan 2027 00:00:00 GMT");
  ExpectReturnedAtOnce();
}

// Issue 11 #10: past 2262 a nanosecond time_point overflows.
TEST_P(RetryAfterMatrix, TheLastDateOfYear9999IsTooLong) {
  Serve503("Fri, 31 Dec 9999 23:59:59 GMT");
  ExpectReturnedAtOnce();
}

// SPEC §14: under an outage the retry budget holds attempts per call at
// about 1.1 (without it, 3). The breaker is kept from opening here so the
// budget alone is measured.
TEST_P(RetryAfterMatrix, AnOutageOf1000CallsCostsTheServerAtMost11AttemptsPer10Calls) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  Settings settings = PaymentsSettings();
  settings.breaker_policy.trip = [](const circuit::Counts&) { return false; };
  StartClient(settings);
  constexpr int kCalls = 1000;
  for (int i = 0; i < kCalls; ++i) {
    auto call = client->SendAsync(Request::Get("/"));
    ASSERT_TRUE(DriveBackoffs([&] { return call.wait_for(0s) == std::future_status::ready; }));
    auto response = call.get();
    ASSERT_TRUE(response) << response.error().message();
    ASSERT_EQ(response->status, 503);
  }
  EXPECT_LE(server->request_count(), kCalls * 11 / 10);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
}

OUTBOUND_MATRIX_BOTH_PROTOCOLS(RetryAfterMatrix);

}  // namespace
}  // namespace outbound::http::matrix
