// SPDX-License-Identifier: Apache-2.0
//
// Building requests: percent-encoding against the characters that break
// naive encoders, queries, builders, bodies, JSON, and Require2xx.
#include "outbound/http/message.h"

#include <gtest/gtest.h>

#include "outbound/http/json.h"

namespace outbound::http {
namespace {

TEST(PercentEncodeTest, EncodesEveryReservedAndOtherByte) {
  EXPECT_EQ(PercentEncode(" "), "%20");  // never "+", which a server may read as a plus
  EXPECT_EQ(PercentEncode("+"), "%2B");  // a literal plus is not a space
  EXPECT_EQ(PercentEncode("&"), "%26");
  EXPECT_EQ(PercentEncode("="), "%3D");
  EXPECT_EQ(PercentEncode("#"), "%23");
  EXPECT_EQ(PercentEncode("%"), "%25");  // already-encoded text is encoded again
  EXPECT_EQ(PercentEncode("%20"), "%2520");
  EXPECT_EQ(PercentEncode("/"), "%2F");
  EXPECT_EQ(PercentEncode("?"), "%3F");
  EXPECT_EQ(PercentEncode(std::string_view("\0", 1)), "%00");
  EXPECT_EQ(PercentEncode("\r\n"), "%0D%0A");
  EXPECT_EQ(PercentEncode(":@!$'()*,;[]"), "%3A%40%21%24%27%28%29%2A%2C%3B%5B%5D");
}

TEST(PercentEncodeTest, EncodesUtf8ByteByByteInUpperCaseHex) {
  EXPECT_EQ(PercentEncode("é"), "%C3%A9");
  EXPECT_EQ(PercentEncode("日本"), "%E6%97%A5%E6%9C%AC");
  EXPECT_EQ(PercentEncode("😀"), "%F0%9F%98%80");
  EXPECT_EQ(PercentEncode("\xff"), "%FF");
}

TEST(PercentEncodeTest, KeepsTheUnreservedCharacters) {
  const std::string unreserved =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
  EXPECT_EQ(PercentEncode(unreserved), unreserved);
  EXPECT_EQ(PercentEncode(""), "");
}

TEST(QueryTest, EncodesNamesAndValuesInTheOrderAdded) {
  Query q;
  q.Add("q", "a b&c=d").Add("tag", "x+y").Add("limit", 10).Add("live", true).Add("k y", "");
  EXPECT_EQ(q.encoded(), "q=a%20b%26c%3Dd&tag=x%2By&limit=10&live=true&k%20y=");
  EXPECT_EQ(Query({{"a", "1"}, {"a", "2"}}).encoded(), "a=1&a=2");
  EXPECT_TRUE(Query().empty());
}

TEST(QueryTest, IsAppendedToTheUrl) {
  Query q{{"city", "São Paulo"}, {"next", "/a?b#c"}};
  EXPECT_EQ(Request::Get("/search").WithQuery(q).url,
            "/search?city=S%C3%A3o%20Paulo&next=%2Fa%3Fb%23c");
  EXPECT_EQ(Request::Get("/search?page=2").WithQuery(Query{{"x", "1"}}).url, "/search?page=2&x=1");
  EXPECT_EQ(Request::Get("/search?").WithQuery(Query{{"x", "1"}}).url, "/search?x=1");
  EXPECT_EQ(Request::Get("/search?a=1&").WithQuery(Query{{"x", "1"}}).url, "/search?a=1&x=1");
  EXPECT_EQ(Request::Get("/search").WithQuery(Query()).url, "/search");
}

TEST(RequestTest, BuildersSetTheMethodAndBody) {
  EXPECT_EQ(Request::Get("/a").method, "GET");
  EXPECT_EQ(Request::Head("/a").method, "HEAD");
  EXPECT_EQ(Request::Delete("/a").method, "DELETE");
  Request post = Request::Post("/a", "one");
  EXPECT_EQ(post.method, "POST");
  EXPECT_EQ(post.body, "one");
  EXPECT_TRUE(post.headers.empty());
  EXPECT_EQ(Request::Put("/a", "two").method, "PUT");
  EXPECT_EQ(Request::Put("/a", "two").body, "two");
  EXPECT_EQ(Request::Patch("/a", "three").method, "PATCH");
  EXPECT_EQ(Request::Patch("/a", "three").body, "three");
}

TEST(RequestTest, ATypedBodySetsOneContentType) {
  Request r = Request::Put("/a", Body{"<a/>", "application/xml"});
  EXPECT_EQ(r.body, "<a/>");
  EXPECT_EQ(FindHeader(r.headers, "content-type"), "application/xml");
  r.Header("content-type", "text/plain").WithBody(Body{"{}", "application/json"});
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].second, "application/json");
  r.WithBody(Body{"raw", ""});  // no type: the one set stays
  EXPECT_EQ(r.body, "raw");
  EXPECT_EQ(FindHeader(r.headers, "Content-Type"), "application/json");
}

TEST(RequestTest, TimeoutIsADuration) {
  using namespace std::chrono_literals;
  Request a{.url = "/a", .timeout = 300ms};
  EXPECT_EQ(a.method, "GET");
  EXPECT_EQ(a.timeout, std::chrono::milliseconds(300));
  EXPECT_EQ(Request::Get("/a").WithTimeout(2s).timeout, std::chrono::seconds(2));
  EXPECT_FALSE(Request::Get("/a").timeout);
}

TEST(JsonTest, BodyIsSerializedWithItsContentType) {
  Request r = Request::Post("/charges", Json({{"amount", 500}, {"note", "a \"b\""}}));
  EXPECT_EQ(r.body, R"({"amount":500,"note":"a \"b\""})");
  EXPECT_EQ(FindHeader(r.headers, "Content-Type"), "application/json");
}

TEST(JsonTest, ReadJsonParsesOrFailsAsAValue) {
  Response ok;
  ok.status = 200;
  ok.headers.Add("Content-Type", "application/json; charset=utf-8");
  ok.body = R"({"id":"ch_1"})";
  auto parsed = ReadJson(ok);
  ASSERT_TRUE(parsed);
  EXPECT_EQ((*parsed)["id"], "ch_1");
  Response html;
  html.headers.Add("Content-Type", "application/json");
  html.body = "<html>";
  html.attempts = 2;
  auto bad = ReadJson(html);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::kInvalidResponse);
  EXPECT_EQ(bad.error().attempts(), 2);
  auto passed = ReadJson(Result<Response>(Fail(ErrorKind::kDeadline, "late")));
  ASSERT_FALSE(passed);
  EXPECT_EQ(passed.error().kind(), ErrorKind::kDeadline);
}

// A body is read as JSON only when its Content-Type says JSON: a proxy's
// HTML error page is refused by its type, before any parse.
TEST(JsonTest, ReadJsonReadsOnlyWhatItsContentTypeSaysIsJson) {
  for (const char* type : {"application/json", "Application/JSON", "application/problem+json",
                           " application/json ; charset=utf-8"}) {
    Response response;
    response.headers.Add("Content-Type", type);
    response.body = "{}";
    EXPECT_TRUE(ReadJson(response)) << type;
  }
  Response html;
  html.headers.Add("Content-Type", "text/html");
  html.body = "{}";  // JSON, but not said to be
  auto refused = ReadJson(html);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidResponse);
  EXPECT_EQ(refused.error().message(), "the response's Content-Type is text/html, not JSON");
  Response untyped;
  untyped.body = "{}";
  auto none = ReadJson(untyped);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message(), "the response has no Content-Type: not read as JSON");
}

TEST(Require2xxTest, TurnsAnyOtherStatusIntoAnError) {
  for (int status : {200, 201, 204, 299}) {
    Response r;
    r.status = status;
    EXPECT_TRUE(Require2xx(r)) << status;
  }
  for (int status : {199, 301, 404, 503}) {
    Response r;
    r.status = status;
    r.attempts = 3;
    auto result = Require2xx(r);
    ASSERT_FALSE(result) << status;
    EXPECT_EQ(result.error().kind(), ErrorKind::kHttpStatus);
    EXPECT_EQ(result.error().message(), "status " + std::to_string(status) + ", not 2xx");
    EXPECT_EQ(result.error().attempts(), 3);
  }
  auto error = Require2xx(Fail(ErrorKind::kRejected, "open"));
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().kind(), ErrorKind::kRejected);
}

TEST(OrThrowTest, ThrowsTheErrorAsATypedException) {
  EXPECT_EQ(OrThrow(Result<int>(7)), 7);
  try {
    (void)OrThrow(Result<int>(Fail(ErrorKind::kInvalidSettings, "Settings.timeout: bad")));
    FAIL() << "no exception";
  } catch (const Exception& e) {
    EXPECT_EQ(e.error().kind(), ErrorKind::kInvalidSettings);
    EXPECT_STREQ(e.what(), "Settings.timeout: bad");
  }
}

}  // namespace
}  // namespace outbound::http
