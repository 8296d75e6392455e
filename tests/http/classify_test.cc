// SPDX-License-Identifier: Apache-2.0
#include "outbound/http/classify.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client_test_support.h"
#include "outbound/http/client.h"
#include "outbound/http/settings.h"

namespace outbound::http {
namespace {

using retry::Outcome;
using std::chrono::seconds;

Result<Response> Status(int status, ResponseHeaders headers = {}) {
  Response r;
  r.status = status;
  r.headers = std::move(headers);
  r.received_at = std::chrono::sys_days(std::chrono::year(2026) / 1 / 1);
  return r;
}

struct Row {
  int status;
  Outcome retry;
  circuit::Outcome breaker;
};

TEST(DefaultClassifyTest, FollowsTheRfc9110Table) {
  const Row rows[] = {
      {200, Outcome::kSuccess, circuit::Outcome::kSuccess},
      {204, Outcome::kSuccess, circuit::Outcome::kSuccess},
      {302, Outcome::kSuccess, circuit::Outcome::kSuccess},
      {400, Outcome::kSuccess, circuit::Outcome::kSuccess},
      {404, Outcome::kSuccess, circuit::Outcome::kSuccess},
      {409, Outcome::kSuccess, circuit::Outcome::kSuccess},
      {408, Outcome::kRetry, circuit::Outcome::kSuccess},
      {429, Outcome::kRetry, circuit::Outcome::kSuccess},
      {500, Outcome::kStop, circuit::Outcome::kFailure},
      {501, Outcome::kStop, circuit::Outcome::kSuccess},
      {502, Outcome::kRetry, circuit::Outcome::kFailure},
      {503, Outcome::kRetry, circuit::Outcome::kFailure},
      {504, Outcome::kRetry, circuit::Outcome::kFailure},
      {505, Outcome::kStop, circuit::Outcome::kSuccess},
  };
  for (const Row& row : rows) {
    Classification c = DefaultClassify(Status(row.status));
    EXPECT_EQ(c.retry, row.retry) << row.status;
    EXPECT_EQ(c.breaker, row.breaker) << row.status;
    EXPECT_EQ(c.retry_after, Duration::zero()) << row.status;
  }
}

TEST(DefaultClassifyTest, ErrorsRetryExceptAnUntrustedCertificate) {
  Classification untrusted = DefaultClassify(Fail(ErrorKind::kTlsUntrusted, "x"));
  EXPECT_EQ(untrusted.retry, Outcome::kStop);
  EXPECT_EQ(untrusted.breaker, circuit::Outcome::kFailure);
  for (ErrorKind kind : {ErrorKind::kTransport, ErrorKind::kDeadline}) {
    Classification c = DefaultClassify(Fail(kind, "x"));
    EXPECT_EQ(c.retry, Outcome::kRetry);
    EXPECT_EQ(c.breaker, circuit::Outcome::kFailure);
  }
}

TEST(DefaultClassifyTest, ReadsRetryAfterOn429And503Only) {
  EXPECT_EQ(DefaultClassify(Status(503, {{"Retry-After", "2"}})).retry_after, seconds(2));
  EXPECT_EQ(DefaultClassify(Status(429, {{"retry-after", "7"}})).retry_after, seconds(7));
  EXPECT_EQ(DefaultClassify(Status(502, {{"Retry-After", "2"}})).retry_after, Duration::zero());
  EXPECT_EQ(DefaultClassify(Status(503, {{"Retry-After", "soon"}})).retry_after, Duration::zero());
}

TEST(ParseRetryAfterTest, ReadsBothRfc9110Forms) {
  auto now = std::chrono::sys_days(std::chrono::year(2015) / 10 / 21) + std::chrono::hours(7);
  EXPECT_EQ(ParseRetryAfter("120", now), seconds(120));
  EXPECT_EQ(ParseRetryAfter(" 0 ", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now), seconds(28 * 60));
  // A date in the past is clamped at zero.
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 06:00:00 GMT", now), seconds(0));
}

TEST(ParseRetryAfterTest, IgnoresMalformedAndHostileValues) {
  auto now = std::chrono::system_clock::time_point{};
  EXPECT_FALSE(ParseRetryAfter("", now));
  EXPECT_FALSE(ParseRetryAfter("-5", now));
  EXPECT_FALSE(ParseRetryAfter("1.5", now));
  EXPECT_FALSE(ParseRetryAfter("12abc", now));
  EXPECT_FALSE(ParseRetryAfter("tomorrow", now));
  // A huge number does not overflow: it is just very long.
  EXPECT_GE(*ParseRetryAfter("99999999999999999999999999", now), std::chrono::hours(24));
}

// The calendar time `text` ("2026-01-01 00:00:00") names, for `now`.
std::chrono::system_clock::time_point At(int y, unsigned m, unsigned d, int h = 0, int min = 0,
                                         int s = 0) {
  return std::chrono::sys_days(std::chrono::year(y) / m / d) + std::chrono::hours(h) +
         std::chrono::minutes(min) + std::chrono::seconds(s);
}

TEST(ParseRetryAfterTest, ReadsTheThreeHttpDateFormats) {
  auto now = At(2015, 10, 21, 7);
  // IMF-fixdate, and the two obsolete forms a recipient must still accept.
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now), seconds(28 * 60));
  EXPECT_EQ(ParseRetryAfter("Wednesday, 21-Oct-15 07:28:00 GMT", now), seconds(28 * 60));
  EXPECT_EQ(ParseRetryAfter("Wed Oct 21 07:28:00 2015", now), seconds(28 * 60));
  EXPECT_EQ(ParseRetryAfter("Wed Oct  1 07:28:00 2015", At(2015, 10, 1, 7)), seconds(28 * 60));
  EXPECT_EQ(ParseRetryAfter("Thu, 29 Feb 2024 00:00:01 GMT", At(2024, 2, 29)), seconds(1));
}

TEST(ParseRetryAfterTest, ReadsATwoDigitYearAsTheLatestNotMoreThan50YearsAhead) {
  auto now = At(2026, 1, 1);
  EXPECT_EQ(ParseRetryAfter("Thursday, 01-Jan-26 00:00:09 GMT", now), seconds(9));
  // 2094 would be more than 50 years ahead: 1994, in the past.
  EXPECT_EQ(ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now), seconds(0));
  // 2076 is not: a wait of 50 years, longer than any a call makes.
  EXPECT_EQ(ParseRetryAfter("Friday, 01-Jan-76 00:00:00 GMT", now), kMaxRetryAfter);
}

TEST(ParseRetryAfterTest, APastDateIsNoWait) {
  auto now = At(2026, 1, 1);
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Thu, 01 Jan 1970 00:00:00 GMT", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Mon, 01 Jan 0001 00:00:00 GMT", now), seconds(0));
  // Further in the past than a time point reaches (1677): still no overflow.
  EXPECT_EQ(ParseRetryAfter("Sun Nov  6 08:49:37 1497", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Sat, 01 Jan 0000 00:00:00 GMT", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Wed, 31 Dec 2025 23:59:59 GMT", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Thu, 01 Jan 2026 00:00:00 GMT", now), seconds(0));
}

TEST(ParseRetryAfterTest, AFarFutureDateIsTheLongestWaitWithoutOverflow) {
  using Time = std::chrono::system_clock::time_point;
  // Dates past what a system_clock time point holds (2262), read from any
  // `now` that one holds.
  for (Time now : {At(2026, 1, 1), Time{}, Time::min(), Time::max()}) {
    for (const char* date : {"Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 2300 00:00:00 GMT",
                             "Fri Dec 31 23:59:59 9999"}) {
      EXPECT_EQ(ParseRetryAfter(date, now), kMaxRetryAfter) << date;
    }
  }
  EXPECT_EQ(ParseRetryAfter("Sat, 01 Jan 2028 00:00:00 GMT", At(2026, 1, 1)), kMaxRetryAfter);
  EXPECT_EQ(ParseRetryAfter("Thu, 31 Dec 2026 00:00:00 GMT", At(2026, 1, 1)),
            std::chrono::hours(24 * 364));
}

TEST(ParseRetryAfterTest, AFarFutureDateOrHugeDelayOutlastsTheLongestBackoff) {
  Settings defaults = DefaultSettings();
  for (const char* value : {"Fri, 31 Dec 9999 23:59:59 GMT", "99999999999999999999"}) {
    Classification c = DefaultClassify(Status(503, {{"Retry-After", value}}));
    EXPECT_EQ(c.retry, Outcome::kRetry);
    EXPECT_GT(c.retry_after, defaults.backoff_max) << value;  // so the call ends with the 503
  }
}

TEST(ParseRetryAfterTest, HugeDelaysAreTheLongestWait) {
  auto now = At(2026, 1, 1);
  EXPECT_EQ(ParseRetryAfter("99999999999999999999", now), kMaxRetryAfter);
  EXPECT_EQ(ParseRetryAfter("9223372036854775808", now), kMaxRetryAfter);
  EXPECT_EQ(ParseRetryAfter("31536000", now), kMaxRetryAfter);
  EXPECT_EQ(ParseRetryAfter("0000000000000000000000000000000000000000001", now), seconds(1));
}

TEST(ParseRetryAfterTest, IgnoresMalformedDates) {
  auto now = At(2015, 10, 21, 7);
  for (const char* value : {
           "Wed, 21 Oct 2015 07:28:00 gmt",        // HTTP-date is case-sensitive
           "wed, 21 Oct 2015 07:28:00 GMT",        //
           "Wed, 21 oct 2015 07:28:00 GMT",        //
           "Wed, 21 Oct 2015 07:28:00 UTC",        // GMT only
           "Wed, 21 Oct 2015 07:28:00",            //
           "Wed, 21 Oct 2015 07:28:00 GMT x",      // trailing text
           "Wed,21 Oct 2015 07:28:00 GMT",         // spaces are exact
           "Wed, 21  Oct 2015 07:28:00 GMT",       //
           "Wed, 1 Oct 2015 07:28:00 GMT",         // two-digit day
           "Wed, 32 Oct 2015 07:28:00 GMT",        // no such day
           "Sun, 29 Feb 2015 07:28:00 GMT",        // not a leap year
           "Wed, 31 Apr 2015 07:28:00 GMT",        //
           "Wed, 00 Oct 2015 07:28:00 GMT",        //
           "Wed, 21 Oct 2015 24:00:00 GMT",        // no such time
           "Wed, 21 Oct 2015 07:60:00 GMT",        //
           "Wed, 21 Oct 2015 07:28:61 GMT",        //
           "Wed, 21 Oct 15 07:28:00 GMT",          // four-digit year
           "Wed, 21 Oct 20155 07:28:00 GMT",       //
           "Wed, 21 Oct -015 07:28:00 GMT",        //
           "Xyz, 21 Oct 2015 07:28:00 GMT",        // no such day name
           "Wed, 21 Okt 2015 07:28:00 GMT",        // no such month
           "Wed, 21 Oct 2015 7:28:00 GMT",         // two-digit hour
           "Wed, +1 Oct 2015 07:28:00 GMT",        //
           "Wed 21 Oct 2015 07:28:00 GMT",         //
           "Wed, 21-Oct-15 07:28:00 GMT",          // RFC 850 takes the full day name
           "Wednesday, 21-Oct-2015 07:28:00 GMT",  //
           "Wed Oct 21 07:28:00 15",               // asctime: four-digit year
           "Wed Oct 21 07:28:00 2015 GMT",         //
           "Wed Oct 1 07:28:00 2015",              // asctime pads the day with a space
           "2015-10-21T07:28:00Z",                 //
           "+5",                                   //
           "5 ",                                   // (trimmed, so read: see below)
       }) {
    if (std::string_view(value) == "5 ") continue;
    EXPECT_FALSE(ParseRetryAfter(value, now)) << value;
  }
  EXPECT_EQ(ParseRetryAfter("5 ", now), seconds(5));
  EXPECT_FALSE(ParseRetryAfter(std::string_view("5\0", 2), now));
  EXPECT_FALSE(ParseRetryAfter("1 2", now));
}

// Over a real client: a wait a server asks for that no call makes ends the
// call with the response as it came, after one request.
class RetryAfterOverTheWireTest : public ClientTestBase,
                                  public ::testing::TestWithParam<Protocol> {};

TEST_P(RetryAfterOverTheWireTest, AFarFutureOrHugeRetryAfterReturnsThe503AfterOneRequest) {
  std::string retry_after;
  Serve(
      [&](const testing::ServerRequest&) {
        return testing::Reply::Status(503).Header("Retry-After", retry_after);
      },
      GetParam());
  auto client = MakeClient();
  const std::vector<std::string> values = {"Fri, 31 Dec 9999 23:59:59 GMT",
                                           "Fri Dec 31 23:59:59 9999", "99999999999999999999"};
  for (const std::string& value : values) {
    retry_after = value;
    auto response = client->Send(Request::Get("/charges/1"));
    ASSERT_TRUE(response) << value << ": " << response.error().message();
    EXPECT_EQ(response->status, 503);
    EXPECT_EQ(response->header("Retry-After"), value);
  }
  EXPECT_EQ(server->request_count(), values.size());
  for (const AttemptRecord& attempt : Attempts()) {
    EXPECT_EQ(attempt.decision, retry::DecisionKind::kRetryAfterTooLong);
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, RetryAfterOverTheWireTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11),
                         [](const auto& param_info) {
                           return param_info.param == Protocol::kHttp2 ? "http2" : "http1";
                         });

TEST(FindHeaderTest, IsCaseInsensitive) {
  Headers headers = {{"Content-Type", "a"}, {"retry-after", "3"}};
  EXPECT_EQ(FindHeader(headers, "content-type"), "a");
  EXPECT_EQ(FindHeader(headers, "Retry-After"), "3");
  EXPECT_EQ(FindHeader(headers, "Missing"), "");
}

TEST(ResponseHeadersTest, KeepsFieldsInOrderAndFindsNamesInAnyCase) {
  ResponseHeaders headers;
  headers.Add("Content-Type", "text/plain");
  headers.Add("set-cookie", "a=1");
  headers.Add("Set-Cookie", "b=2");
  headers.Add("X-Empty", "");
  EXPECT_EQ(headers.size(), 4u);
  EXPECT_EQ(headers.Find("content-type"), "text/plain");
  EXPECT_EQ(headers.Find("SET-COOKIE"), "a=1");  // the first of two
  EXPECT_EQ(headers.Find("x-empty"), "");
  EXPECT_EQ(headers.Find("Missing"), "");
  std::vector<std::string> seen;
  for (const auto& [name, value] : headers)
    seen.push_back(std::string(name) + "=" + std::string(value));
  EXPECT_EQ(seen, (std::vector<std::string>{"Content-Type=text/plain", "set-cookie=a=1",
                                            "Set-Cookie=b=2", "X-Empty="}));
}

TEST(ResponseHeadersTest, ACopyOwnsItsFields) {
  auto original = std::make_unique<ResponseHeaders>(
      ResponseHeaders{{"Retry-After", "3"}, {"Location", "/next"}});
  ResponseHeaders copy = *original;
  original.reset();
  EXPECT_EQ(copy.Find("location"), "/next");
  EXPECT_EQ(copy.size(), 2u);
  EXPECT_EQ((*copy.begin()).name, "Retry-After");
  EXPECT_EQ((*copy.begin()).value, "3");
}

TEST(ResponseHeadersTest, ACopyHoldsTheFieldsWithoutTheRoomMadeAhead) {
  ResponseHeaders roomy;
  roomy.reserve(512);
  roomy.Add("Location", "/next");
  EXPECT_EQ(roomy.capacity(), 512u);
  ResponseHeaders copy = roomy;
  EXPECT_EQ(copy.capacity(), 8u + 8u + 5u);  // two sizes, the name, the value
  EXPECT_EQ(copy.Find("location"), "/next");
  ResponseHeaders assigned{{"X-Old", "1"}};
  assigned = roomy;
  EXPECT_EQ(assigned.size(), 1u);
  EXPECT_EQ(assigned.Find("x-old"), "");
  EXPECT_EQ(assigned.Find("Location"), "/next");
  copy.Add("Retry-After", "3");  // grows as any other
  EXPECT_EQ(copy.size(), 2u);
  EXPECT_EQ(copy.Find("retry-after"), "3");
}

TEST(ResponseHeadersTest, ClearedItKeepsItsRoomAndTakesFieldsAgain) {
  ResponseHeaders headers;
  headers.reserve(256);
  headers.Add("Location", "/next");
  headers.clear();
  EXPECT_EQ(headers.size(), 0u);
  EXPECT_TRUE(headers.begin() == headers.end());
  EXPECT_EQ(headers.Find("location"), "");
  EXPECT_EQ(headers.capacity(), 256u);
  headers.Add("Retry-After", "3");
  EXPECT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers.Find("retry-after"), "3");
  EXPECT_EQ(headers.capacity(), 256u);
}

TEST(ResponseHeadersTest, AMovedFromSetIsEmptyAndTakesFieldsAgain) {
  ResponseHeaders from{{"Retry-After", "3"}, {"Location", "/next"}};
  ResponseHeaders to = std::move(from);
  EXPECT_EQ(to.size(), 2u);
  EXPECT_EQ(to.Find("retry-after"), "3");
  EXPECT_EQ(from.size(), 0u);  // NOLINT(bugprone-use-after-move): its state is the contract
  EXPECT_TRUE(from.begin() == from.end());
  from.Add("X-Again", "1");
  EXPECT_EQ(from.size(), 1u);
  EXPECT_EQ((*from.begin()).value, "1");
  to = std::move(from);
  EXPECT_EQ(to.size(), 1u);
  EXPECT_EQ(to.Find("Retry-After"), "");
}

TEST(ResponseHeadersTest, MovedOntoItselfItKeepsItsFields) {
  ResponseHeaders headers{{"Retry-After", "3"}};
  ResponseHeaders& same = headers;
  headers = std::move(same);
  EXPECT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers.Find("retry-after"), "3");
  headers.Add("X-Long", std::string(100, 'v'));  // grows past the room it had
  EXPECT_EQ(headers.Find("x-long"), std::string(100, 'v'));
}

TEST(ResponseHeadersTest, FieldsOutgrowTheRoomReservedForThem) {
  ResponseHeaders headers;
  headers.reserve(16);
  std::string long_value(100, 'v');
  for (int i = 0; i < 20; ++i) headers.Add("x-" + std::to_string(i), long_value);
  EXPECT_EQ(headers.size(), 20u);
  int seen = 0;
  for (const auto& [name, value] : headers) {
    EXPECT_EQ(name, "x-" + std::to_string(seen++));
    EXPECT_EQ(value, long_value);
  }
  EXPECT_EQ(seen, 20);
}

}  // namespace
}  // namespace outbound::http
