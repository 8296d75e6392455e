#include "outbound/http/classify.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace outbound::http
